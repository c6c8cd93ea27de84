// Package natsconn connects a worker or the CLI to NATS from flags and the
// environment (12-factor): NATS_URL, NATS_USER, NATS_PASSWORD, NATS_TOKEN,
// NATS_CREDS and NATS_TLS_CA/CERT/KEY.
//
// Every binary connects the same way, so the options live here once: a worker
// reconnects forever (a broker restart must not kill every pod; the stage
// watchdog decides when a lost consumer is fatal), and the URL it logs never
// carries credentials.
package natsconn
