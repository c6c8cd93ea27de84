// Package natsserver runs a real nats-server with JetStream inside the
// current process.
//
// The one-process shape of oxypipe (oxy run --state-dir) and the tests use
// it instead of an external broker: it is the same server a cluster runs,
// so delivery, acks, dedupe, NakWithDelay and KV behave exactly as in
// production. JetStream state lives in Config.StoreDir, so a run that was
// killed resumes where it stopped when the server is started again on the
// same directory: streams keep their messages and durable consumers keep
// their ack floors.
//
// Clients in the same process connect without a TCP port (Server.Connect
// uses an in-process connection); set Config.Listen to also serve TCP
// clients (for example a worker binary started from another terminal).
//
// Tests use the natstest subpackage. Every test binary that links the
// server takes ~30 s to build cold, so keep them few.
package natsserver
