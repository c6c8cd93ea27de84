package destination

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/oxypipe/oxypipe/internal/redact"
	"github.com/oxypipe/oxypipe/pkg/destination/azuredest"
	"github.com/oxypipe/oxypipe/pkg/destination/gcsdest"
	"github.com/oxypipe/oxypipe/pkg/destination/internal/core"
	"github.com/oxypipe/oxypipe/pkg/destination/s3dest"
)

// Config configures Open. The zero value opens every kind of location with
// the defaults of its implementation and credentials from the environment.
type Config struct {
	// Local configures local folders and file:// locations.
	Local LocalConfig
	// S3 configures s3:// (and s3a://) locations.
	S3 s3dest.Config
	// GCS configures gs:// (and gcs://) locations.
	GCS gcsdest.Config
	// Azure configures az:// (and azure://) locations.
	Azure azuredest.Config
}

// Option changes the Config of one Open call.
type Option func(*Config)

// WithLocal sets the configuration of local folders.
func WithLocal(cfg LocalConfig) Option { return func(c *Config) { c.Local = cfg } }

// WithS3 sets the configuration of s3:// locations.
func WithS3(cfg s3dest.Config) Option { return func(c *Config) { c.S3 = cfg } }

// WithGCS sets the configuration of gs:// locations.
func WithGCS(cfg gcsdest.Config) Option { return func(c *Config) { c.GCS = cfg } }

// WithAzure sets the configuration of az:// locations.
func WithAzure(cfg azuredest.Config) Option { return func(c *Config) { c.Azure = cfg } }

// WithConfig replaces the whole configuration.
func WithConfig(cfg Config) Option { return func(c *Config) { *c = cfg } }

// Open returns the destination a location names (see the package
// documentation for the forms). A value containing "://" is a URL: s3, gs and
// az open object stores, file a local folder, and any other scheme fails with
// ErrUnknownScheme. Anything else is a local folder path.
//
// Open sends no request and creates nothing; call Probe before the first
// billable work. Errors are *Error values with Op "open".
func Open(ctx context.Context, location string, opts ...Option) (Destination, error) {
	var cfg Config
	for _, opt := range opts {
		opt(&cfg)
	}
	loc, err := parseLocation(location)
	if err != nil {
		return nil, core.Fail("open", safeLocation(location), "", err)
	}
	switch loc.kind {
	case kindS3:
		return opened(s3dest.New(ctx, loc.bucket, loc.path, cfg.S3))
	case kindGCS:
		return opened(gcsdest.New(ctx, loc.bucket, loc.path, cfg.GCS))
	case kindAzure:
		return opened(azuredest.New(ctx, loc.bucket, loc.path, cfg.Azure))
	default:
		return opened(NewLocal(loc.path, cfg.Local))
	}
}

// opened turns a constructor's typed result into an interface, keeping a
// failed open a nil interface rather than one holding a nil pointer.
func opened[T Destination](d T, err error) (Destination, error) {
	if err != nil {
		return nil, err
	}
	return d, nil
}

type locationKind int

const (
	kindLocal locationKind = iota
	kindS3
	kindGCS
	kindAzure
)

// location is a parsed location string.
type location struct {
	kind   locationKind
	scheme string // as written, for messages and Split
	bucket string // object stores: bucket or container
	path   string // object stores: the key path below the bucket; local: the folder
}

var schemes = map[string]locationKind{
	"s3": kindS3, "s3a": kindS3,
	"gs": kindGCS, "gcs": kindGCS,
	"az": kindAzure, "azure": kindAzure,
	"file": kindLocal,
}

func parseLocation(s string) (location, error) {
	if s == "" {
		return location{}, fmt.Errorf("%w: empty", ErrInvalidLocation)
	}
	scheme, rest, isURL := strings.Cut(s, "://")
	if !isURL {
		return location{kind: kindLocal, path: s}, nil
	}
	kind, known := schemes[strings.ToLower(scheme)]
	if !known {
		return location{}, fmt.Errorf("%w %q: want s3://, gs://, az://, file:// or a local folder path", ErrUnknownScheme, scheme)
	}
	if strings.ContainsAny(rest, "?#") {
		return location{}, fmt.Errorf("%w: a query or fragment is not supported; pass credentials through the environment", ErrInvalidLocation)
	}
	authority, p, _ := strings.Cut(rest, "/")
	if strings.Contains(authority, "@") {
		return location{}, fmt.Errorf("%w: credentials in the URL are not supported; pass them through the environment", ErrInvalidLocation)
	}
	if kind == kindLocal {
		if authority != "" && authority != "localhost" {
			return location{}, fmt.Errorf("%w: a file URL must be absolute (file:///path), got host %q", ErrInvalidLocation, authority)
		}
		return location{kind: kindLocal, scheme: scheme, path: "/" + p}, nil
	}
	if authority == "" {
		return location{}, fmt.Errorf("%w: no bucket after %s://", ErrInvalidLocation, scheme)
	}
	return location{kind: kind, scheme: scheme, bucket: authority, path: p}, nil
}

// safeLocation is a location fit for an error message: credentials and
// query strings removed.
func safeLocation(s string) string {
	if i := strings.IndexAny(s, "?#"); i >= 0 && strings.Contains(s, "://") {
		s = s[:i] + "?REDACTED"
	}
	return redact.String(s)
}

// Split splits the location of one file, such as a run log
// "logs/20260929T170412.345Z.jsonl" or "s3://bucket/logs/x.jsonl", into the
// location of its folder and its name, so that
// Open(folder) then Get(name) reads it. The name must pass ValidateName.
func Split(fileLocation string) (folder, name string, err error) {
	loc, err := parseLocation(fileLocation)
	if err != nil {
		return "", "", core.Fail("open", safeLocation(fileLocation), "", err)
	}
	switch {
	case loc.scheme == "":
		folder, name = filepath.Split(fileLocation)
		if folder == "" {
			folder = "."
		}
	case loc.kind != kindLocal && loc.path == "":
		return "", "", core.Fail("open", safeLocation(fileLocation), "", fmt.Errorf("%w: no file name after the bucket", ErrInvalidLocation))
	default:
		i := strings.LastIndex(fileLocation, "/")
		folder, name = fileLocation[:i], fileLocation[i+1:]
		if strings.HasSuffix(folder, "://") { // file:///x.jsonl
			folder += "/"
		}
	}
	if err := core.ValidateName(name); err != nil {
		return "", "", core.Fail("open", safeLocation(fileLocation), "", err)
	}
	return folder, name, nil
}
