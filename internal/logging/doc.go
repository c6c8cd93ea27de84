// Package logging builds the zap loggers every oxypipe binary uses: JSON
// lines for workers (what a log collector expects), a console form for the
// CLI, both with credentials redacted.
//
// Redaction happens in the encoder, on the finished line: whatever reaches
// the output — the message, any field, a wrapped error, a stack trace, a
// field added with With — has the userinfo of every URL replaced by
// "redacted:redacted" (see internal/redact). So a payload's storage_url or a
// NATS URL with a password cannot reach a log, however it was logged.
package logging
