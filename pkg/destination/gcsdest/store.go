package gcsdest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"

	"cloud.google.com/go/storage"
	"google.golang.org/api/googleapi"
	"google.golang.org/api/iterator"
	"google.golang.org/api/option"

	"github.com/oxypipe/oxypipe/pkg/destination/internal/core"
)

// DefaultChunkSize is the default Config.ChunkSize.
const DefaultChunkSize = 8 << 20

// chunkQuantum is the granularity Cloud Storage rounds chunk sizes to.
const chunkQuantum = 256 << 10

// Config configures a Cloud Storage store. The zero value uses Application
// Default Credentials and honours STORAGE_EMULATOR_HOST.
type Config struct {
	// Client, when set, is used as is and ClientOptions are ignored. It is not
	// closed by Close.
	Client *storage.Client

	// ClientOptions are passed to storage.NewClient, for example
	// option.WithEndpoint and option.WithoutAuthentication for an emulator,
	// or option.WithCredentialsFile.
	ClientOptions []option.ClientOption

	// ChunkSize is the largest body sent in one request and the chunk size of
	// a resumable upload, in bytes; a multiple of 256 KiB. Default
	// DefaultChunkSize. Memory per Put is about 3 × ChunkSize for long
	// bodies.
	ChunkSize int
}

func (c Config) withDefaults() Config {
	if c.ChunkSize == 0 {
		c.ChunkSize = DefaultChunkSize
	}
	return c
}

func (c Config) validate() error {
	if c.ChunkSize < chunkQuantum || c.ChunkSize%chunkQuantum != 0 {
		return fmt.Errorf("gcs chunk size %d is not a positive multiple of %d", c.ChunkSize, chunkQuantum)
	}
	return nil
}

// Store is a destination in a Cloud Storage bucket under a prefix. It is safe
// for concurrent use.
type Store struct {
	client    *storage.Client
	owned     bool
	bucket    *storage.BucketHandle
	keyPrefix string
	location  string
	chunkSize int
}

// New returns a store for the objects of bucket under prefix. It creates a
// client (which looks up credentials) but sends no request; Probe does.
func New(ctx context.Context, bucket, prefix string, cfg Config) (*Store, error) {
	keyPrefix, location, err := core.OpenObjectStore("gs", bucket, prefix)
	if err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, core.Fail("open", location, "", fmt.Errorf("%w: %w", core.ErrInvalidLocation, err))
	}
	client, owned := cfg.Client, false
	if client == nil {
		client, err = storage.NewClient(ctx, cfg.ClientOptions...)
		if err != nil {
			return nil, core.Fail("open", location, "", fmt.Errorf("create Cloud Storage client: %w", err))
		}
		owned = true
	}
	return &Store{
		client:    client,
		owned:     owned,
		bucket:    client.Bucket(bucket),
		keyPrefix: keyPrefix,
		location:  location,
		chunkSize: cfg.ChunkSize,
	}, nil
}

// String returns the location, "gs://bucket/prefix/".
func (s *Store) String() string { return s.location }

// Probe lists at most one object under the prefix: it fails with
// ErrLocationNotFound when the bucket does not exist and ErrAccessDenied when
// the credentials may not list it, and writes nothing.
func (s *Store) Probe(ctx context.Context) error {
	q := &storage.Query{Prefix: s.keyPrefix}
	if err := q.SetAttrSelection([]string{"Name"}); err != nil {
		return core.Fail("probe", s.location, "", err)
	}
	it := s.bucket.Objects(ctx, q)
	it.PageInfo().MaxSize = 1
	_, err := it.Next()
	if errors.Is(err, iterator.Done) {
		err = nil
	}
	return core.Fail("probe", s.location, "", classify(err))
}

// Put uploads body as the object prefix+name, replacing any object of that
// name. The object appears only when the upload is finalized; a failed or
// cancelled Put leaves the previous object, if any, unchanged.
func (s *Store) Put(ctx context.Context, name string, body io.Reader) error {
	if err := core.ValidateName(name); err != nil {
		return core.Fail("put", s.location, name, err)
	}
	return core.Fail("put", s.location, name, classify(s.put(ctx, name, core.ContextReader(ctx, body))))
}

func (s *Store) put(ctx context.Context, name string, body io.Reader) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	head, complete, err := core.ReadHead(body, int64(s.chunkSize))
	if err != nil {
		return err
	}
	// Cancelling the writer's context is the only way to abandon an upload:
	// closing the Writer would finalize whatever it received.
	wctx, abandon := context.WithCancel(ctx)
	defer abandon()
	w := s.bucket.Object(s.keyPrefix + name).NewWriter(wctx)
	w.ContentType = core.ContentType(name)
	w.ChunkSize = s.chunkSize
	if complete {
		// One request; a chunk just large enough keeps the SDK's retry
		// buffer small.
		w.ChunkSize = max(chunkQuantum, (len(head)+chunkQuantum-1)/chunkQuantum*chunkQuantum)
		body = strings.NewReader("")
	}
	if _, err := w.Write(head); err != nil {
		abandon()
		_ = w.Close()
		return err
	}
	if _, err := io.Copy(w, body); err != nil {
		abandon()
		_ = w.Close()
		return err
	}
	return w.Close()
}

// Get opens the object prefix+name for reading; the caller closes it. A
// missing object fails with ErrNotFound.
func (s *Store) Get(ctx context.Context, name string) (io.ReadCloser, error) {
	if err := core.ValidateName(name); err != nil {
		return nil, core.Fail("get", s.location, name, err)
	}
	r, err := s.bucket.Object(s.keyPrefix + name).NewReader(ctx)
	if err != nil {
		return nil, core.Fail("get", s.location, name, classify(err))
	}
	return r, nil
}

// List returns the sorted names directly under the prefix that start with
// namePrefix. Deeper objects (holding a "/" after the prefix) are left out.
func (s *Store) List(ctx context.Context, namePrefix string) ([]string, error) {
	q := &storage.Query{Prefix: s.keyPrefix + namePrefix, Delimiter: "/"}
	if err := q.SetAttrSelection([]string{"Name"}); err != nil {
		return nil, core.Fail("list", s.location, "", err)
	}
	var names []string
	it := s.bucket.Objects(ctx, q)
	for {
		attrs, err := it.Next()
		if errors.Is(err, iterator.Done) {
			break
		}
		if err != nil {
			return nil, core.Fail("list", s.location, "", classify(err))
		}
		if name := strings.TrimPrefix(attrs.Name, s.keyPrefix); attrs.Name != "" && name != "" {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names, nil
}

// Close closes the client if New created it.
func (s *Store) Close() error {
	if !s.owned {
		return nil
	}
	return core.Fail("close", s.location, "", s.client.Close())
}

// classify wraps err with the sentinel its Cloud Storage error means.
func classify(err error) error {
	if err == nil {
		return nil
	}
	switch {
	case errors.Is(err, storage.ErrBucketNotExist):
		return fmt.Errorf("%w: %w", core.ErrLocationNotFound, err)
	case errors.Is(err, storage.ErrObjectNotExist):
		return fmt.Errorf("%w: %w", core.ErrNotFound, err)
	}
	var apiErr *googleapi.Error
	if errors.As(err, &apiErr) {
		switch apiErr.Code {
		case http.StatusUnauthorized, http.StatusForbidden:
			return fmt.Errorf("%w: %w", core.ErrAccessDenied, err)
		case http.StatusNotFound:
			return fmt.Errorf("%w: %w", core.ErrLocationNotFound, err)
		}
	}
	return err
}
