package s3dest

import (
	"errors"
	"fmt"
	"os"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// Defaults of Config.
const (
	// DefaultPartSize is the part size of a multipart upload, and the size up
	// to which a body goes up in a single PUT: S3's minimum part size.
	DefaultPartSize = 5 << 20
	// DefaultConcurrency is the number of parts of one Put in flight.
	DefaultConcurrency = 2
	// DefaultRegion is used when neither Config nor the environment names one;
	// S3-compatible stores ignore it, and AWS answers a wrong one with a
	// redirect error that names the bucket's region.
	DefaultRegion = "us-east-1"
)

// Config configures an S3 store. The zero value reads everything from the
// environment and the shared AWS config files.
type Config struct {
	// Client, when set, is used as is and Region, Endpoint, UsePathStyle,
	// Credentials and HTTPClient are ignored. It is not closed by Close.
	Client *s3.Client

	// Region of the bucket. Default: AWS_REGION, AWS_DEFAULT_REGION or the
	// shared config's region, else DefaultRegion.
	Region string

	// Endpoint is the base URL of an S3-compatible store, such as
	// "http://127.0.0.1:9000". Default: AWS_ENDPOINT_URL_S3 or
	// AWS_ENDPOINT_URL, else AWS itself.
	Endpoint string

	// UsePathStyle addresses buckets as ENDPOINT/BUCKET/KEY instead of
	// BUCKET.ENDPOINT/KEY, as most S3-compatible stores need. It is also
	// turned on by AWS_S3_FORCE_PATH_STYLE=true, and by default whenever a
	// custom endpoint is configured (set AWS_S3_FORCE_PATH_STYLE=false to keep
	// virtual-hosted addressing then).
	UsePathStyle bool

	// Credentials override the SDK's default credential chain.
	Credentials aws.CredentialsProvider

	// HTTPClient overrides the SDK's HTTP client.
	HTTPClient aws.HTTPClient

	// PartSize is the multipart part size in bytes, and the largest body sent
	// in a single PUT. Default DefaultPartSize; at least 5 MiB (S3's minimum).
	// Memory per Put is about (Concurrency+2) × PartSize for long bodies.
	PartSize int64

	// Concurrency is the number of parts of one Put uploaded at once.
	// Default DefaultConcurrency.
	Concurrency int
}

func (c Config) withDefaults() Config {
	if c.PartSize == 0 {
		c.PartSize = DefaultPartSize
	}
	if c.Concurrency == 0 {
		c.Concurrency = DefaultConcurrency
	}
	return c
}

func (c Config) validate() error {
	if c.PartSize < DefaultPartSize {
		return fmt.Errorf("s3 part size %d is below the minimum %d", c.PartSize, DefaultPartSize)
	}
	if c.Concurrency < 1 {
		return fmt.Errorf("s3 concurrency %d is below 1", c.Concurrency)
	}
	return nil
}

// pathStyle decides path-style addressing from the config and the
// environment (see Config.UsePathStyle).
func (c Config) pathStyle() (bool, error) {
	if c.UsePathStyle {
		return true, nil
	}
	if v, ok := os.LookupEnv("AWS_S3_FORCE_PATH_STYLE"); ok && v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return false, errors.New("AWS_S3_FORCE_PATH_STYLE is not a boolean")
		}
		return b, nil
	}
	return c.Endpoint != "" || os.Getenv("AWS_ENDPOINT_URL_S3") != "" || os.Getenv("AWS_ENDPOINT_URL") != "", nil
}
