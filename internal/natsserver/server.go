package natsserver

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"go.uber.org/zap"

	"github.com/oxypipe/oxypipe/internal/redact"
)

// Config configures [Start].
type Config struct {
	// StoreDir is where JetStream keeps its state. Required; reuse it to
	// resume after a crash.
	StoreDir string
	// Listen makes the server accept TCP clients on Host:Port. Without it
	// the server has no port at all and only Server.Connect reaches it.
	Listen bool
	// Host is the TCP listen host. Default 127.0.0.1.
	Host string
	// Port is the TCP port. Default 0: a free port (see Server.ClientURL).
	Port int
	// ServerName names the server in JetStream metadata. Default
	// "oxy-embedded".
	ServerName string
	// MaxStore and MaxMemory cap JetStream file and memory storage in
	// bytes. 0 lets the server choose (a share of the disk and of the RAM).
	MaxStore  int64
	MaxMemory int64
	// SyncAlways makes JetStream write every stored message through to the
	// disk (fsync) before it acknowledges it: what was acknowledged — a
	// claim, a job id stored under it, a payload, a status event — then
	// survives a power loss or a kernel crash, not only the end of this
	// process. Without it the server syncs every two minutes (its default),
	// so a power loss can take back up to two minutes of acknowledged
	// writes, and a claim that took them back lets a resumed run submit a
	// payload again. A consumer's delivery state (its acks) is written
	// every 100 ms either way: one lost with the power only redelivers
	// messages, which the stages handle idempotently. The option is the
	// server's: it covers every stream, the claims bucket among them.
	SyncAlways bool
	// Logger receives the server's notices, warnings and errors. Nil keeps
	// the server silent.
	Logger *zap.Logger
	// Debug also forwards the server's debug lines to Logger.
	Debug bool
}

// Server is a running embedded nats-server.
type Server struct {
	ns  *server.Server
	cfg Config
}

// Start starts the server and waits until it accepts connections or ctx is
// done.
func Start(ctx context.Context, cfg Config) (*Server, error) {
	if cfg.StoreDir == "" {
		return nil, errors.New("natsserver: Config.StoreDir is required")
	}
	if cfg.Host == "" {
		cfg.Host = "127.0.0.1"
	}
	if cfg.Port == 0 {
		cfg.Port = server.RANDOM_PORT
	}
	if cfg.ServerName == "" {
		cfg.ServerName = "oxy-embedded"
	}
	opts := &server.Options{
		ServerName:         cfg.ServerName,
		Host:               cfg.Host,
		Port:               cfg.Port,
		DontListen:         !cfg.Listen,
		JetStream:          true,
		StoreDir:           cfg.StoreDir,
		JetStreamMaxStore:  cfg.MaxStore,
		JetStreamMaxMemory: cfg.MaxMemory,
		SyncAlways:         cfg.SyncAlways,
		NoSigs:             true,
		NoLog:              cfg.Logger == nil,
		Debug:              cfg.Debug,
	}
	ns, err := server.NewServer(opts)
	if err != nil {
		return nil, fmt.Errorf("natsserver: %w", err)
	}
	if cfg.Logger != nil {
		ns.SetLoggerV2(zapLogger{cfg.Logger.Named("nats-server")}, cfg.Debug, false, false)
	}
	ns.Start()
	for !ns.ReadyForConnections(50 * time.Millisecond) {
		if err := ctx.Err(); err != nil {
			ns.Shutdown()
			ns.WaitForShutdown()
			return nil, fmt.Errorf("natsserver: not ready: %w", err)
		}
		if !ns.Running() {
			return nil, errors.New("natsserver: server stopped while starting (see its log)")
		}
	}
	return &Server{ns: ns, cfg: cfg}, nil
}

// ClientURL is the URL TCP clients use ("nats://127.0.0.1:PORT"), or ""
// when the server does not listen.
func (s *Server) ClientURL() string {
	if !s.cfg.Listen {
		return ""
	}
	return s.ns.ClientURL()
}

// StoreDir is the JetStream state directory.
func (s *Server) StoreDir() string { return s.cfg.StoreDir }

// SyncsEveryWrite reports whether the running server fsyncs every stored
// message before acknowledging it (Config.SyncAlways), as the server itself
// reports its JetStream configuration.
func (s *Server) SyncsEveryWrite() bool {
	c := s.ns.JetStreamConfig()
	return c != nil && c.SyncAlways
}

// Connect returns a client connected in-process (no TCP). opts are applied
// after oxypipe's defaults (a name, unlimited reconnects).
func (s *Server) Connect(opts ...nats.Option) (*nats.Conn, error) {
	all := append([]nats.Option{
		nats.InProcessServer(s.ns),
		nats.Name("oxy-embedded-client"),
		nats.MaxReconnects(-1),
	}, opts...)
	nc, err := nats.Connect("", all...)
	if err != nil {
		return nil, fmt.Errorf("natsserver: connect: %w", err)
	}
	return nc, nil
}

// NATS returns the underlying server, for tests that need its internals.
func (s *Server) NATS() *server.Server { return s.ns }

// Shutdown stops the server and waits until it is down or ctx is done.
// JetStream state is flushed to StoreDir.
func (s *Server) Shutdown(ctx context.Context) error {
	done := make(chan struct{})
	go func() {
		s.ns.Shutdown()
		s.ns.WaitForShutdown()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("natsserver: shutdown: %w", ctx.Err())
	}
}

// zapLogger adapts zap to the server's logger interface. Lines are passed
// through redact.String: the server can log client URLs.
type zapLogger struct{ l *zap.Logger }

func (z zapLogger) Noticef(format string, v ...any) {
	z.l.Info(redact.String(fmt.Sprintf(format, v...)))
}
func (z zapLogger) Warnf(format string, v ...any) { z.l.Warn(redact.String(fmt.Sprintf(format, v...))) }
func (z zapLogger) Fatalf(format string, v ...any) {
	z.l.Error(redact.String(fmt.Sprintf(format, v...)))
}
func (z zapLogger) Errorf(format string, v ...any) {
	z.l.Error(redact.String(fmt.Sprintf(format, v...)))
}
func (z zapLogger) Debugf(format string, v ...any) {
	z.l.Debug(redact.String(fmt.Sprintf(format, v...)))
}
func (z zapLogger) Tracef(format string, v ...any) {
	z.l.Debug(redact.String(fmt.Sprintf(format, v...)))
}
