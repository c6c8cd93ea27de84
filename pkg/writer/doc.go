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
//
// # Outcomes
//
//	what happened                               what the writer does
//	body streamed into <id>.json                record success at "written", ack
//	results 204 (expired), 5xx, network         soft failure, retry after back-off
//	run record missing, probe or write failed   soft failure, retry after back-off
//	  … on the last allowed delivery            hard failure, unfetched, with the last error
//	destination unusable (bad URL, scheme)      hard failure, unfetched, at once
//	the run names no destination                ack without writing when the run's final
//	                                            data type is "done", else hard failure at once
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
package writer
