package s3dest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/feature/s3/transfermanager"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/oxypipe/oxypipe/pkg/destination/internal/core"
)

// Store is a destination in an S3 bucket under a key prefix. It is safe for
// concurrent use.
type Store struct {
	client    *s3.Client
	uploader  *transfermanager.Client
	bucket    string
	keyPrefix string
	location  string
}

// New returns a store for the objects of bucket under prefix (a path such as
// "runs/2026", with or without slashes around it). It reads the environment
// and shared config but sends no request; Probe does.
func New(ctx context.Context, bucket, prefix string, cfg Config) (*Store, error) {
	keyPrefix, location, err := core.OpenObjectStore("s3", bucket, prefix)
	if err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, core.Fail("open", location, "", fmt.Errorf("%w: %w", core.ErrInvalidLocation, err))
	}
	client := cfg.Client
	checksums := aws.RequestChecksumCalculationUnset
	if client == nil {
		client, checksums, err = newClient(ctx, cfg)
		if err != nil {
			return nil, core.Fail("open", location, "", err)
		}
	}
	uploader := transfermanager.New(client, func(o *transfermanager.Options) {
		o.PartSizeBytes = cfg.PartSize
		o.MultipartUploadThreshold = cfg.PartSize
		o.Concurrency = cfg.Concurrency
		// The transfer manager asks for checksums on every request unless
		// told otherwise, overriding the client; honour the user's
		// AWS_REQUEST_CHECKSUM_CALCULATION=when_required, which some
		// S3-compatible stores need.
		if checksums != aws.RequestChecksumCalculationUnset {
			o.RequestChecksumCalculation = checksums
		}
	})
	return &Store{client: client, uploader: uploader, bucket: bucket, keyPrefix: keyPrefix, location: location}, nil
}

func newClient(ctx context.Context, cfg Config) (*s3.Client, aws.RequestChecksumCalculation, error) {
	pathStyle, err := cfg.pathStyle()
	if err != nil {
		return nil, 0, err
	}
	var loaders []func(*config.LoadOptions) error
	if cfg.Region != "" {
		loaders = append(loaders, config.WithRegion(cfg.Region))
	}
	if cfg.Credentials != nil {
		loaders = append(loaders, config.WithCredentialsProvider(cfg.Credentials))
	}
	if cfg.HTTPClient != nil {
		loaders = append(loaders, config.WithHTTPClient(cfg.HTTPClient))
	}
	awsCfg, err := config.LoadDefaultConfig(ctx, loaders...)
	if err != nil {
		return nil, 0, fmt.Errorf("load AWS config: %w", err)
	}
	if awsCfg.Region == "" {
		awsCfg.Region = DefaultRegion
	}
	client := s3.NewFromConfig(awsCfg, func(o *s3.Options) {
		o.UsePathStyle = pathStyle
		if cfg.Endpoint != "" {
			o.BaseEndpoint = aws.String(cfg.Endpoint)
		}
	})
	return client, awsCfg.RequestChecksumCalculation, nil
}

// String returns the location, "s3://bucket/prefix/".
func (s *Store) String() string { return s.location }

// Probe lists at most one key under the prefix: it fails with
// ErrLocationNotFound when the bucket does not exist and ErrAccessDenied when
// the credentials may not list it, and writes nothing.
func (s *Store) Probe(ctx context.Context) error {
	_, err := s.client.ListObjectsV2(ctx, &s3.ListObjectsV2Input{
		Bucket:  aws.String(s.bucket),
		Prefix:  aws.String(s.keyPrefix),
		MaxKeys: aws.Int32(1),
	})
	return core.Fail("probe", s.location, "", classify(err, core.ErrLocationNotFound))
}

// Put uploads body as the object prefix+name, replacing any object of that
// name. The object appears only when the upload completes; a failed or
// cancelled Put leaves the previous object, if any, unchanged.
func (s *Store) Put(ctx context.Context, name string, body io.Reader) error {
	if err := core.ValidateName(name); err != nil {
		return core.Fail("put", s.location, name, err)
	}
	if err := ctx.Err(); err != nil {
		return core.Fail("put", s.location, name, err)
	}
	_, err := s.uploader.UploadObject(ctx, &transfermanager.UploadObjectInput{
		Bucket:      aws.String(s.bucket),
		Key:         aws.String(s.keyPrefix + name),
		Body:        core.ContextReader(ctx, body),
		ContentType: aws.String(core.ContentType(name)),
	})
	if err != nil && ctx.Err() != nil && !errors.Is(err, ctx.Err()) {
		err = fmt.Errorf("%w: %w", ctx.Err(), err)
	}
	return core.Fail("put", s.location, name, classify(err, core.ErrLocationNotFound))
}

// Get opens the object prefix+name for reading; the caller closes it. A
// missing object fails with ErrNotFound.
func (s *Store) Get(ctx context.Context, name string) (io.ReadCloser, error) {
	if err := core.ValidateName(name); err != nil {
		return nil, core.Fail("get", s.location, name, err)
	}
	out, err := s.client.GetObject(ctx, &s3.GetObjectInput{
		Bucket: aws.String(s.bucket),
		Key:    aws.String(s.keyPrefix + name),
	})
	if err != nil {
		return nil, core.Fail("get", s.location, name, classify(err, core.ErrNotFound))
	}
	return out.Body, nil
}

// List returns the sorted names directly under the prefix that start with
// namePrefix. Deeper keys (holding a "/" after the prefix) are left out.
func (s *Store) List(ctx context.Context, namePrefix string) ([]string, error) {
	var names []string
	pages := s3.NewListObjectsV2Paginator(s.client, &s3.ListObjectsV2Input{
		Bucket:    aws.String(s.bucket),
		Prefix:    aws.String(s.keyPrefix + namePrefix),
		Delimiter: aws.String("/"),
	})
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return nil, core.Fail("list", s.location, "", classify(err, core.ErrLocationNotFound))
		}
		for _, obj := range page.Contents {
			name := strings.TrimPrefix(aws.ToString(obj.Key), s.keyPrefix)
			if name != "" {
				names = append(names, name)
			}
		}
	}
	slices.Sort(names)
	return names, nil
}

// Close releases nothing: the SDK client holds no resources that need it.
func (s *Store) Close() error { return nil }

// classify wraps err with the sentinel its S3 error code means. notFound is
// what a 404 without a telling code means for the operation (a missing
// bucket for a listing, a missing key for a read).
func classify(err, notFound error) error {
	if err == nil {
		return nil
	}
	var apiErr smithy.APIError
	if errors.As(err, &apiErr) {
		switch apiErr.ErrorCode() {
		case "NoSuchBucket":
			return fmt.Errorf("%w: %w", core.ErrLocationNotFound, err)
		case "NoSuchKey":
			return fmt.Errorf("%w: %w", core.ErrNotFound, err)
		case "AccessDenied", "InvalidAccessKeyId", "SignatureDoesNotMatch", "ExpiredToken",
			"InvalidToken", "AllAccessDisabled", "AccountProblem", "Forbidden":
			return fmt.Errorf("%w: %w", core.ErrAccessDenied, err)
		}
	}
	var respErr *smithyhttp.ResponseError
	if errors.As(err, &respErr) {
		switch respErr.HTTPStatusCode() {
		case http.StatusNotFound:
			return fmt.Errorf("%w: %w", notFound, err)
		case http.StatusUnauthorized, http.StatusForbidden:
			return fmt.Errorf("%w: %w", core.ErrAccessDenied, err)
		}
	}
	return err
}
