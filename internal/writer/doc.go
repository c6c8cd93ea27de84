// Package writer is the last stage of a run: for every done job it streams
// the API's results body, unchanged, into the run's destination as
// "<api job id>.json", and records the doc written.
//
// # Why it is built this way
//
//   - The file is the API's body byte for byte (wsa.Client.Results streams
//     it, destination.Destination.Put streams it on), so a 20 MB result
//     costs a copy buffer, not 20 MB, and the file is exactly what was
//     billed. Puts are atomic (temporary file and rename locally, a single
//     PUT or a completed multipart upload on object stores) and replace a
//     file of the same name; nothing is ever deleted. A redelivered Done
//     therefore rewrites the same file and records the same success again,
//     which the ledger applies once.
//   - The destination belongs to the run: the writer reads it from the
//     run's record in the runs bucket (RunAnnounced.Destination), opens each
//     location once and probes it once per run before that run's first
//     write, so a run whose bucket is missing fails fast with a clear error
//     and a healthy run costs one probe, not one per file.
//   - A failure is retried with the consumer's back-off (1 s, 5 s, 15 s,
//     30 s, 60 s by default) and, on the consumer's last allowed delivery,
//     recorded as a hard failure in state unfetched: the job is done at the
//     API and its result can still be fetched by id at no cost.
//   - A failed write stops the run's submissions. When the destination
//     cannot take a file — at once for a failure no quick retry cures
//     (destination.IsPermanent: a full disk, a denied write, a missing
//     bucket or folder), else after Config.OutputRetries quick tries — the
//     writer stops the run in the runs bucket (cause "output", reason
//     "Stopped submitting, because a write to the destination failed: …"),
//     so no submitter sends another of its payloads; they end unsubmitted
//     with that reason. The write itself goes on being retried with
//     back-off, so jobs already submitted are written if the destination
//     recovers; at the stop's deadline the statusworker records the rest
//     unfetched with their ids.
//   - The body is checked to be one JSON value as it streams
//     (internal/jsonvalid); one that is not (an HTML page, a body cut
//     short) fails the read that would end it, so the atomic Put aborts and
//     no such file exists. It is a failed fetch: retried, then unfetched.
//   - Once the run has ended (or its stop's deadline passed), a failed
//     attempt is not retried: the job is recorded unfetched at once.
//   - In one process the poller may write a done job itself through the
//     writer (Writer implements poller.Sink: Writes, WriteResults), with
//     this package's JSON check, atomic Put and byte and time metrics, for
//     runs this writer already resolved. It never resolves, retries, or
//     stops a run: a write that fails there comes here as a Done, and
//     every rule below applies to it.
//
// # Outcomes
//
//	what happened                               what the writer does
//	body streamed into <id>.json                record success at "written", ack
//	results 204 (expired), 5xx, network         soft failure, retry after back-off
//	results body not JSON                       soft failure, retry after back-off
//	run record missing                          soft failure, retry after back-off
//	probe or write failed                       quick retries (none when permanent), then
//	                                            stop the run; soft failure, retry after back-off
//	  … on the last allowed delivery            hard failure, unfetched, with the last error
//	  … once the run ended or its stop expired  hard failure, unfetched, at once
//	destination unusable (bad URL, scheme),     hard failure, unfetched, at once (and the
//	  or the run names none                     run is stopped)
//	the run names no destination and its final  ack without writing
//	  data type is "done"
//
// The error of a hard failure is the run log's: the API's status code,
// message and trace id for an HTTP failure (204 for expired results), and for
// a failed probe or write no status code and a message naming the
// destination, the file and the cause.
//
// # Metrics
//
// With Config.Stage.Registerer set, besides the runtime's oxy_stage_*
// series:
//
//	oxy_writer_bytes_total                  bytes written to destinations
//	oxy_writer_write_seconds                from the results request to the file being in place
//	oxy_writer_finish_to_written_seconds    from the job finishing at the API to its file being in place
//	oxy_writer_failures_total{kind}         failed attempts: run, probe, fetch, expired, write
//	oxy_writer_probes_total{result}         destination probes: ok, error
//	oxy_writer_run_stops_total{result}      runs found unwritable: stopped, already (stopping or over)
package writer
