// Package health serves a worker's operational endpoints on one port
// (OXY_HTTP_ADDR in the binaries): /live, /ready and /metrics.
//
// Kubernetes restarts a pod whose /live fails and stops routing to (and
// KEDA and operators look at) one whose /ready fails, so the two mean
// different things:
//
//   - /live is 200 unless a component is stuck: a stage answers 503 while a
//     handler has run longer than twice its timeout. A worker that is merely
//     disconnected is alive; restarting it would not help.
//   - /ready is 200 when every component is ready (a stage: connected and its
//     consumer registered) and 503 otherwise, with a JSON body giving each
//     component's state, so "why is this pod not ready" is one curl away.
//   - /metrics serves the Prometheus registry the worker was given.
//
// Any other path is 404 with the body {}. Components plug in through the
// two-method [Checker] interface; internal/stage's Worker implements it.
package health
