package core

import (
	"context"
	"io"
	"path"
)

// ContextReader returns a reader that fails with ctx's error at the first
// Read after ctx ends. Storage SDKs read a body outside their request
// contexts (while buffering a part, say), so without it a cancelled Put
// would keep draining a long body.
func ContextReader(ctx context.Context, r io.Reader) io.Reader {
	return &contextReader{ctx: ctx, r: r}
}

type contextReader struct {
	ctx context.Context
	r   io.Reader
}

func (c *contextReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}

// ReadHead reads up to limit bytes of r. It reports whether r ended within
// them (complete); a Put then sends the head as one request instead of
// starting a chunked upload. Read errors other than io.EOF are returned.
func ReadHead(r io.Reader, limit int64) (head []byte, complete bool, err error) {
	head, err = io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, false, err
	}
	if int64(len(head)) <= limit {
		return head, true, nil
	}
	return head, false, nil
}

// ContentType is the media type stored with an object, chosen by the name's
// extension: results are JSON, run logs JSON lines.
func ContentType(name string) string {
	switch path.Ext(name) {
	case ".json":
		return "application/json"
	case ".jsonl":
		return "application/jsonl"
	default:
		return "application/octet-stream"
	}
}
