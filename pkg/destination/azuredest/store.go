package azuredest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/streaming"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blockblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"

	"github.com/oxypipe/oxypipe/pkg/destination/internal/core"
)

// Store is a destination in an Azure Blob Storage container under a prefix.
// It is safe for concurrent use.
type Store struct {
	container   *container.Client
	keyPrefix   string
	location    string
	blockSize   int64
	concurrency int
}

// New returns a store for the blobs of containerName under prefix. It builds
// a client from cfg and the environment but sends no request; Probe does.
func New(_ context.Context, containerName, prefix string, cfg Config) (*Store, error) {
	keyPrefix, location, err := core.OpenObjectStore("az", containerName, prefix)
	if err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, core.Fail("open", location, "", fmt.Errorf("%w: %w", core.ErrInvalidLocation, err))
	}
	client, err := cfg.containerClient(containerName)
	if err != nil {
		return nil, core.Fail("open", location, "", err)
	}
	return &Store{
		container:   client,
		keyPrefix:   keyPrefix,
		location:    location,
		blockSize:   cfg.BlockSize,
		concurrency: cfg.Concurrency,
	}, nil
}

// String returns the location, "az://container/prefix/".
func (s *Store) String() string { return s.location }

// Probe lists at most one blob under the prefix: it fails with
// ErrLocationNotFound when the container does not exist and ErrAccessDenied
// when the credentials may not list it, and writes nothing.
func (s *Store) Probe(ctx context.Context) error {
	pager := s.container.NewListBlobsFlatPager(&container.ListBlobsFlatOptions{
		Prefix:     &s.keyPrefix,
		MaxResults: ptr(int32(1)),
	})
	_, err := pager.NextPage(ctx)
	return core.Fail("probe", s.location, "", classify(err, core.ErrLocationNotFound))
}

// Put uploads body as the blob prefix+name, replacing any blob of that name.
// The blob appears only when the upload commits; a failed or cancelled Put
// leaves the previous blob, if any, unchanged.
func (s *Store) Put(ctx context.Context, name string, body io.Reader) error {
	if err := core.ValidateName(name); err != nil {
		return core.Fail("put", s.location, name, err)
	}
	return core.Fail("put", s.location, name, classify(s.put(ctx, name, core.ContextReader(ctx, body)), core.ErrLocationNotFound))
}

func (s *Store) put(ctx context.Context, name string, body io.Reader) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	head, complete, err := core.ReadHead(body, s.blockSize)
	if err != nil {
		return err
	}
	blobClient := s.container.NewBlockBlobClient(s.keyPrefix + name)
	headers := &blob.HTTPHeaders{BlobContentType: ptr(core.ContentType(name))}
	if complete {
		_, err = blobClient.Upload(ctx, streaming.NopCloser(bytes.NewReader(head)), &blockblob.UploadOptions{HTTPHeaders: headers})
		return err
	}
	_, err = blobClient.UploadStream(ctx, io.MultiReader(bytes.NewReader(head), body), &blockblob.UploadStreamOptions{
		BlockSize:   s.blockSize,
		Concurrency: s.concurrency,
		HTTPHeaders: headers,
	})
	return err
}

// Get opens the blob prefix+name for reading; the caller closes it. A missing
// blob fails with ErrNotFound. The reader resumes a download whose
// connection drops.
func (s *Store) Get(ctx context.Context, name string) (io.ReadCloser, error) {
	if err := core.ValidateName(name); err != nil {
		return nil, core.Fail("get", s.location, name, err)
	}
	resp, err := s.container.NewBlobClient(s.keyPrefix+name).DownloadStream(ctx, nil)
	if err != nil {
		return nil, core.Fail("get", s.location, name, classify(err, core.ErrNotFound))
	}
	return resp.NewRetryReader(ctx, nil), nil
}

// List returns the sorted names directly under the prefix that start with
// namePrefix. Deeper blobs (holding a "/" after the prefix) are left out.
func (s *Store) List(ctx context.Context, namePrefix string) ([]string, error) {
	prefix := s.keyPrefix + namePrefix
	pager := s.container.NewListBlobsHierarchyPager("/", &container.ListBlobsHierarchyOptions{Prefix: &prefix})
	var names []string
	for pager.More() {
		page, err := pager.NextPage(ctx)
		if err != nil {
			return nil, core.Fail("list", s.location, "", classify(err, core.ErrLocationNotFound))
		}
		if page.Segment == nil {
			continue
		}
		for _, item := range page.Segment.BlobItems {
			if item.Name == nil {
				continue
			}
			if name := strings.TrimPrefix(*item.Name, s.keyPrefix); name != "" {
				names = append(names, name)
			}
		}
	}
	slices.Sort(names)
	return names, nil
}

// Close releases nothing: the SDK client holds no resources that need it.
func (s *Store) Close() error { return nil }

// responseError is a one-line summary of the SDK's multi-line
// *azcore.ResponseError (which embeds the whole response body); the original
// stays reachable through errors.As.
type responseError struct {
	err *azcore.ResponseError
}

func (e *responseError) Error() string {
	return fmt.Sprintf("azure blob service answered %d %s", e.err.StatusCode, e.err.ErrorCode)
}

func (e *responseError) Unwrap() error { return e.err }

// classify wraps err with the sentinel its Azure error code means. notFound
// is what a bare 404 means for the operation.
func classify(err, notFound error) error {
	if err == nil {
		return nil
	}
	var respErr *azcore.ResponseError
	if !errors.As(err, &respErr) {
		return err
	}
	short := &responseError{err: respErr}
	switch {
	case respErr.ErrorCode == "ContainerNotFound":
		return fmt.Errorf("%w: %w", core.ErrLocationNotFound, short)
	case respErr.ErrorCode == "BlobNotFound":
		return fmt.Errorf("%w: %w", core.ErrNotFound, short)
	case respErr.StatusCode == http.StatusForbidden || respErr.StatusCode == http.StatusUnauthorized:
		return fmt.Errorf("%w: %w", core.ErrAccessDenied, short)
	case respErr.StatusCode == http.StatusNotFound:
		return fmt.Errorf("%w: %w", notFound, short)
	}
	return short
}

func ptr[T any](v T) *T { return &v }
