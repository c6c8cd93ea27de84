package wsa

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"github.com/oxypipe/oxypipe/internal/redact"
)

// Client calls the WSA Push-Pull endpoints. It is safe for concurrent use.
// Every call makes exactly one request: retries, pacing and polling are the
// caller's (see Classify and Pacer).
type Client struct {
	base      string // BaseURL without a trailing slash
	realtime  string // the Realtime host
	host      string // for String
	auth      string // the Authorization header value
	userAgent string
	hc        *http.Client
	timeout   time.Duration
}

// New returns a Client for cfg, after filling in defaults and validating it.
func New(cfg Config) (*Client, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	u, _ := url.Parse(cfg.BaseURL) // validate parsed it
	return &Client{
		base:      strings.TrimRight(cfg.BaseURL, "/"),
		realtime:  strings.TrimRight(cfg.RealtimeURL, "/"),
		host:      u.Host,
		auth:      "Basic " + base64.StdEncoding.EncodeToString([]byte(cfg.Username+":"+cfg.Password)),
		userAgent: cfg.UserAgent,
		hc:        cfg.HTTPClient,
		timeout:   cfg.Timeout,
	}, nil
}

// String describes the client without its credentials.
func (c *Client) String() string { return fmt.Sprintf("wsa.Client{%s}", c.base) }

// GoString is String, so that %#v hides the credentials too.
func (c *Client) GoString() string { return c.String() }

// errNoAnswer is the cancellation cause of a call that ran past its timeout.
var errNoAnswer = errors.New("wsa: timeout")

// call is one request in flight: its context, its timeout and whether the
// request went out in full.
type call struct {
	parent  context.Context
	ctx     context.Context
	cancel  context.CancelCauseFunc
	timer   *time.Timer
	timeout time.Duration
	sent    atomic.Bool
}

// startCall opens a call. Its timeout cancels the request with errNoAnswer.
func (c *Client) startCall(parent context.Context) *call {
	return startCallTimeout(parent, c.timeout)
}

// startCallTimeout opens a call with its own timeout (none when not
// positive).
func startCallTimeout(parent context.Context, timeout time.Duration) *call {
	ctx, cancel := context.WithCancelCause(parent)
	cl := &call{parent: parent, ctx: ctx, cancel: cancel, timeout: timeout}
	if timeout > 0 {
		cl.timer = time.AfterFunc(timeout, func() { cancel(errNoAnswer) })
	}
	return cl
}

// stopTimer stops the timeout; it reports false when the timeout had
// already fired.
func (cl *call) stopTimer() bool {
	return cl.timer == nil || cl.timer.Stop()
}

// finish releases the call's resources.
func (cl *call) finish() {
	cl.stopTimer()
	cl.cancel(context.Canceled)
}

// failure is the *APIError for a call that got no usable answer: the
// caller's context ended, the timeout fired, or the network failed.
func (cl *call) failure(err error) *APIError {
	sent := cl.sent.Load()
	if perr := cl.parent.Err(); perr != nil {
		return &APIError{Message: "Canceled: " + perr.Error(), Err: perr, RequestSent: sent}
	}
	if errors.Is(context.Cause(cl.ctx), errNoAnswer) {
		return &APIError{Message: fmt.Sprintf("Timeout: no answer within %s", cl.timeout), Err: ErrTimeout, RequestSent: sent}
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err // its text repeats the URL; the cause is what matters
	}
	kind := "ConnectError"
	if sent {
		kind = "ReadError"
	}
	return &APIError{Message: clean(kind + ": " + redact.String(err.Error())), Err: err, RequestSent: sent}
}

// send makes one request and returns the response with its status unchecked.
// A network failure comes back as an *APIError. The caller must close the
// body and call cl.finish.
func (c *Client) send(cl *call, method, path, rawQuery string, body []byte) (*http.Response, error) {
	return c.sendTo(cl, c.base, method, path, rawQuery, body)
}

// sendTo is send to another host of the API (base: scheme, host, prefix).
func (c *Client) sendTo(cl *call, base, method, path, rawQuery string, body []byte) (*http.Response, error) {
	u := base + path
	if rawQuery != "" {
		u += "?" + rawQuery
	}
	ctx := httptrace.WithClientTrace(cl.ctx, &httptrace.ClientTrace{
		WroteRequest: func(info httptrace.WroteRequestInfo) {
			if info.Err == nil {
				cl.sent.Store(true)
			}
		},
	})
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return nil, fmt.Errorf("wsa: build request: %w", err)
	}
	req.Header.Set("Authorization", c.auth)
	req.Header.Set("User-Agent", c.userAgent)
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, cl.failure(err)
	}
	return resp, nil
}

// maxJSONBody bounds the body of a job or batch answer. A batch of 5,000
// full job objects is about 15 MB.
const maxJSONBody = 256 << 20

// maxPresize is the largest declared body size readBody allocates up front.
const maxPresize = 1 << 20

// reply is an answer read whole. Header is nil when no answer came.
type reply struct {
	StatusCode int
	Header     http.Header
	Body       []byte
}

// exchange makes one request whose answer is read whole: the body of a 2xx
// answer is returned, any other answer becomes an *APIError (the reply's
// status and header are returned with it). The timeout covers reading the
// body.
func (c *Client) exchange(ctx context.Context, method, path string, body []byte) (reply, error) {
	return c.exchangeAt(ctx, c.startCall(ctx), c.base, method, path, body)
}

// exchangeAt is exchange on the call cl to the host base.
func (c *Client) exchangeAt(ctx context.Context, cl *call, base, method, path string, body []byte) (reply, error) {
	_ = ctx // cl carries it
	defer cl.finish()
	resp, err := c.sendTo(cl, base, method, path, "", body)
	if err != nil {
		return reply{}, err
	}
	defer func() { drain(resp.Body); _ = resp.Body.Close() }()
	r := reply{StatusCode: resp.StatusCode, Header: resp.Header}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return r, readError(cl, resp)
	}
	data, err := readBody(resp.Body, resp.ContentLength, maxJSONBody)
	if err != nil {
		f := cl.failure(err) // the caller's context, the timeout, or the network
		return r, &APIError{StatusCode: resp.StatusCode, Message: clean(ErrBadResponse.Error() + ": " + f.Message), Err: fmt.Errorf("%w: %w", ErrBadResponse, f.Err)}
	}
	if len(data) > maxJSONBody {
		return r, newBadResponse(resp.StatusCode, "reading the body", fmt.Errorf("larger than %d bytes", maxJSONBody))
	}
	r.Body = data
	return r, nil
}

// readBody reads at most limit+1 bytes of body (one more than allowed, so
// that the caller sees an oversized body). When the answer declares a size
// up to maxPresize, the buffer is allocated once at that size: io.ReadAll
// would start at 512 bytes and grow by copying, several allocations per
// answer on the hottest path of a run. A larger declared size is not
// trusted before its bytes arrive; such a body grows as it is read.
func readBody(body io.Reader, size, limit int64) ([]byte, error) {
	var b bytes.Buffer
	if size >= 0 && size <= min(limit, maxPresize) {
		b.Grow(int(size) + bytes.MinRead) // room to read the end without growing
	}
	_, err := b.ReadFrom(io.LimitReader(body, limit+1))
	return b.Bytes(), err
}

// readError reads a failure answer's body (bounded) into an *APIError.
func readError(cl *call, resp *http.Response) error {
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	if err != nil && cl.parent.Err() != nil {
		return cl.failure(err)
	}
	return DecodeError(resp.StatusCode, reasonPhrase(resp), data)
}

// closeBody drains and closes a body.
func closeBody(body io.ReadCloser) {
	drain(body)
	_ = body.Close()
}

// drain reads a little of what is left of a body, so that its connection
// can be reused.
func drain(body io.Reader) {
	_, _ = io.Copy(io.Discard, io.LimitReader(body, 64<<10))
}

// jobPath returns /v1/queries/{id}, refusing an id that cannot be one.
func jobPath(id string) (string, error) {
	if id == "" {
		return "", errors.New("wsa: empty job id")
	}
	return "/v1/queries/" + url.PathEscape(id), nil
}
