// Package poller is the stage between the submitter and the writer: it
// watches each submitted job at the API until it is done or faulted, and
// hands done jobs on to the writer (or, in one process, writes them through
// it).
//
// # Why it is built this way
//
// The API creates a job at once and finishes it seconds to minutes later
// (about 2 s for a plain page, 20 s rendered, up to minutes for faults). The
// only way to learn the outcome without callbacks is to ask, and a run may
// hold 100,000 pending jobs at a time. So:
//
//   - A pending job is a delayed redelivery of its Submitted message
//     (stage.Wait, a NakWithDelay), never a goroutine sleeping on it: the
//     broker holds the waiting jobs, every replica of the poller shares them,
//     and a poller that dies loses nothing.
//   - Each check is the small GET /v1/queries/{id}. The body is fetched once,
//     later, by the writer — except on the direct path below, where the
//     check is the results request itself and there is no later fetch.
//   - When to check is a function of the time since the job was submitted
//     (Schedule), computed from the clock at each delivery and not from the
//     previous check, so a check that came late (a busy poller, a restart)
//     never makes the ones after it late too: overdue checks are skipped.
//     The default: at 1, 2, … 9 s after the
//     submission, then every 5 s from 10 s. A 2 s job is seen done at 2 s
//     after two checks; a job of an hour costs about 730.
//
// # Outcomes
//
//	status check answers           what the poller does
//	pending                        Wait until the next scheduled check
//	pending past PendingLimit      hard failure, unfetched: "still pending after <d>; stopped checking"
//	done                           publish messages.Done, record success at "done", ack
//	faulted                        hard failure, faulted (error null); never resubmitted
//	404                            hard failure, unfetched, with the API's status code, message and trace id
//	401, 403, other 4xx            hard failure, unfetched, with the error
//	429, 5xx, network, bad body    soft failure, retried with back-off (Config.Retry)
//	  … retries exhausted          hard failure, unfetched, with the last error
//
// Retries of a failing check are exhausted when the first failure of the job
// is Config.Retry.MaxElapsed ago (10 minutes by default), when
// Config.Retry.MaxAttempts failures were counted, when the pending limit has
// passed, or on the consumer's last allowed delivery (MaxDeliver). The first
// two are counted in the memory of the replica that saw the failures: a
// replica that restarts, or a job that moves between replicas, starts
// counting again, and then the pending limit and MaxDeliver still bound the
// retries.
//
// # Cloud-storage uploads
//
// A payload with a storage_url makes the API upload the job's result to a
// bucket and report the outcome as an entry of the job's "statuses" list
// 1–3 s after the job finished (about 20 s for some failures). When the job
// object has a "statuses" key, the poller keeps checking a finished job on
// its schedule until the entry appears, for at most Config.UploadWait after
// the job finished, and carries the entry ({code, message}) in the status
// event it records (the success at "done", or the faulted hard failure).
// No entry by then is recorded as a failed upload (code 0). A job object
// without "statuses" is not waited for. A run of storage payloads is
// complete at "done": its results are in the bucket, and the writer fetches
// nothing for it (its run has no destination).
//
// # Direct writes (one process)
//
// When the poller and the writer run in one process (oxy run), Config.Sink
// lets the poller write done jobs itself. A check of a job whose run the
// writer already writes (its destination resolved and probed, which the
// run's first done job does the usual way) and whose payload has no
// storage_url asks GET /v1/queries/{id}/results instead of the status:
//
//	results answers                        what the poller does
//	204, x-oxylabs-job-status pending      as a pending status (the same schedule and limits)
//	200, x-oxylabs-job-status done         stream the body into the sink; record success at "written", ack
//	  … the write failed                   publish messages.Done and record "done", as for a done status:
//	                                       the writer fetches again and owns the failure
//	200, x-oxylabs-job-status faulted      hard failure, faulted (error null), as for a faulted status
//	204 done or faulted (expired), a       check the status instead, in the same delivery
//	  missing or unknown header
//	404, 4xx, 429, 5xx, network            as the same answer to a status check
//
// That saves, per job, one request to the API (a pending check is a 204 with
// an empty body, not the job's JSON either), the Done message and the
// writer's delivery. A redelivered Submitted after a crash fetches again
// and rewrites the same file atomically; nothing is submitted, so nothing
// is billed. The write runs within the poller's handler timeout; a body
// that does not arrive in time is a failed write, handed to the writer
// with its longer one. Jobs written this way are not observed by
// oxy_poller_done_lag_seconds or oxy_writer_finish_to_written_seconds (their
// updated_at is never read); oxy_writer_bytes_total and
// oxy_writer_write_seconds count them. Kubernetes runs the stages apart,
// with no sink: there the poller holds no destination credentials and the
// writer scales on its own.
//
// # Metrics
//
// With Config.Stage.Registerer set, besides the runtime's oxy_stage_*
// series:
//
//	oxy_poller_checks_total{result}   checks by result: pending, done, faulted, not_found, error
//	oxy_poller_direct_total{result}   done jobs on the direct path: written, handed_off, checked (left to the status check)
//	oxy_poller_done_lag_seconds       from the job's finish (updated_at) to the poller publishing done
package poller
