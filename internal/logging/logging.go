package logging

import (
	"fmt"
	"io"
	"os"
	"strings"

	"go.uber.org/zap"
	"go.uber.org/zap/buffer"
	"go.uber.org/zap/zapcore"

	"github.com/oxypipe/oxypipe/internal/redact"
)

// Format is the shape of a log line.
type Format string

// The log formats.
const (
	// JSON writes one JSON object per line (workers).
	JSON Format = "json"
	// Console writes human-readable lines (the CLI).
	Console Format = "console"
)

// Config configures [New]. The zero value logs info and above as JSON to
// standard error.
type Config struct {
	// Level is debug, info, warn or error. Default info.
	Level string
	// Format is JSON or Console. Default JSON.
	Format Format
	// Output receives the lines. Default os.Stderr.
	Output io.Writer
}

func (c Config) withDefaults() Config {
	if c.Level == "" {
		c.Level = "info"
	}
	if c.Format == "" {
		c.Format = JSON
	}
	if c.Output == nil {
		c.Output = os.Stderr
	}
	return c
}

// New returns a logger as configured, with credentials redacted from every
// line.
func New(cfg Config) (*zap.Logger, error) {
	cfg = cfg.withDefaults()
	level, err := zapcore.ParseLevel(strings.ToLower(cfg.Level))
	if err != nil {
		return nil, fmt.Errorf("logging: level %q: want debug, info, warn or error", cfg.Level)
	}
	var enc zapcore.Encoder
	switch cfg.Format {
	case JSON:
		ec := zap.NewProductionEncoderConfig()
		ec.TimeKey = "time"
		ec.EncodeTime = zapcore.ISO8601TimeEncoder
		enc = zapcore.NewJSONEncoder(ec)
	case Console:
		ec := zap.NewDevelopmentEncoderConfig()
		ec.EncodeTime = zapcore.TimeEncoderOfLayout("15:04:05.000")
		ec.CallerKey = ""
		enc = zapcore.NewConsoleEncoder(ec)
	default:
		return nil, fmt.Errorf("logging: format %q: want %q or %q", cfg.Format, JSON, Console)
	}
	core := zapcore.NewCore(RedactingEncoder(enc), zapcore.Lock(zapcore.AddSync(cfg.Output)), level)
	return zap.New(core, zap.ErrorOutput(zapcore.Lock(zapcore.AddSync(cfg.Output)))), nil
}

// RedactingEncoder wraps enc so that every encoded line has URL credentials
// replaced by "redacted:redacted". Use it when building a zap core by hand.
func RedactingEncoder(enc zapcore.Encoder) zapcore.Encoder {
	return redactingEncoder{Encoder: enc}
}

type redactingEncoder struct {
	zapcore.Encoder
}

func (e redactingEncoder) Clone() zapcore.Encoder {
	return redactingEncoder{Encoder: e.Encoder.Clone()}
}

func (e redactingEncoder) EncodeEntry(ent zapcore.Entry, fields []zapcore.Field) (*buffer.Buffer, error) {
	buf, err := e.Encoder.EncodeEntry(ent, fields)
	if err != nil {
		return nil, err
	}
	line := buf.Bytes()
	if len(line) == 0 {
		return buf, nil
	}
	clean := redact.Bytes(line)
	if &clean[0] == &line[0] && len(clean) == len(line) {
		return buf, nil // nothing to redact: redact.Bytes returned its input
	}
	buf.Reset()
	_, _ = buf.Write(clean)
	return buf, nil
}
