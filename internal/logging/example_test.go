package logging_test

import (
	"os"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/oxypipe/oxypipe/internal/logging"
)

func ExampleRedactingEncoder() {
	ec := zap.NewProductionEncoderConfig()
	ec.TimeKey = "" // keep the example's output stable
	core := zapcore.NewCore(logging.RedactingEncoder(zapcore.NewJSONEncoder(ec)), zapcore.AddSync(os.Stdout), zap.InfoLevel)
	zap.New(core).Info("connected", zap.String("url", "nats://worker:hunter2@nats:4222"))
	// Output:
	// {"level":"info","msg":"connected","url":"nats://redacted:redacted@nats:4222"}
}
