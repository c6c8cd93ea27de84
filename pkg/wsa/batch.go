package wsa

import (
	"encoding/json"
	"strings"

	"github.com/oxypipe/oxypipe/internal/jsonscan"
	"github.com/oxypipe/oxypipe/pkg/payload"
)

// NeitherMessage is the error of a batch payload that the answer mentioned
// neither among its jobs nor among its errors: it created no job the answer
// admits to, so its doc ends with this error rather than silently.
const NeitherMessage = "The batch returned neither a job nor an error"

// batchError is one entry of a batch answer's "errors" list with the input
// values it names.
type batchError struct {
	err    *APIError
	values map[string]string // url, query or prompt → value
}

// batchErrors reads a batch answer's "errors": a list of {"message","url"}
// objects (or strings), or a single object.
func batchErrors(raw json.RawMessage, status int) []batchError {
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	var items []json.RawMessage
	if json.Unmarshal(raw, &items) != nil {
		items = []json.RawMessage{raw}
	}
	out := make([]batchError, 0, len(items))
	for _, item := range items {
		be := batchError{err: &APIError{StatusCode: status, Message: clean(itemMessage(item))}}
		var fields map[string]json.RawMessage
		if json.Unmarshal(item, &fields) == nil {
			be.err.TraceID = clean(jsonText(fields["trace_id"]))
			for _, k := range []string{"url", "query", "prompt"} {
				var s string
				if v, ok := fields[k]; ok && json.Unmarshal(v, &s) == nil {
					if be.values == nil {
						be.values = make(map[string]string, 1)
					}
					be.values[k] = s
				}
			}
		}
		if be.err.Message == "" {
			be.err.Message = "The batch refused this value without a message"
		}
		out = append(out, be)
	}
	return out
}

// matcher hands out the unassigned payload indexes of a batch by input value.
type matcher struct {
	values   []string
	assigned []bool
	exact    map[string][]int
	loose    map[string][]int
}

func newMatcher(values []string) *matcher {
	m := &matcher{values: values, assigned: make([]bool, len(values)),
		exact: make(map[string][]int, len(values)), loose: make(map[string][]int, len(values))}
	for i, v := range values {
		m.exact[v] = append(m.exact[v], i)
		m.loose[loosen(v)] = append(m.loose[loosen(v)], i)
	}
	return m
}

// take returns the first unassigned index whose value is v (exactly, or
// after loosen when loose is true).
func (m *matcher) take(v string, loose bool) (int, bool) {
	idx := m.exact
	if loose {
		idx, v = m.loose, loosen(v)
	}
	queue := idx[v]
	for len(queue) > 0 {
		i := queue[0]
		queue = queue[1:]
		if !m.assigned[i] {
			idx[v] = queue
			m.assigned[i] = true
			return i, true
		}
	}
	idx[v] = queue
	return 0, false
}

// next returns the first unassigned index in input order.
func (m *matcher) next() (int, bool) {
	for i, done := range m.assigned {
		if !done {
			m.assigned[i] = true
			return i, true
		}
	}
	return 0, false
}

// loosen forgives what the API may change when it echoes an input: a
// trailing slash, surrounding space, the case of a URL's scheme and host.
func loosen(v string) string {
	v = strings.TrimSuffix(strings.TrimSpace(v), "/")
	if scheme, rest, ok := strings.Cut(v, "://"); ok {
		host, path, _ := strings.Cut(rest, "/")
		v = strings.ToLower(scheme) + "://" + strings.ToLower(host)
		if path != "" {
			v += "/" + path
		}
	}
	return v
}

// matchBatch pairs a batch answer with its payloads: jobs by their echoed
// input value, then errors by the value they name, then the same with
// loosened values, then what is left by order, jobs before errors (a job
// bills, so it must land on some payload rather than be lost).
func matchBatch(ps []payload.Payload, inputKey string, jobs []Job, errs []batchError) BatchResult {
	values := make([]string, len(ps))
	for i, p := range ps {
		_, values[i] = p.Input()
	}
	m := newMatcher(values)
	res := BatchResult{Items: make([]BatchItem, len(ps))}
	jobValues := make([]string, len(jobs))
	for i, j := range jobs {
		jobValues[i] = echoedInput(j, inputKey)
	}
	jobLeft := make([]bool, len(jobs))
	errLeft := make([]bool, len(errs))
	for i := range jobLeft {
		jobLeft[i] = true
	}
	for i := range errLeft {
		errLeft[i] = true
	}
	for _, loose := range []bool{false, true} {
		for i, j := range jobs {
			if jobLeft[i] {
				if idx, ok := m.take(jobValues[i], loose); ok {
					res.Items[idx].Job, jobLeft[i] = j, false
				}
			}
		}
		for i, e := range errs {
			if v, has := errorValue(e, inputKey); errLeft[i] && has {
				if idx, ok := m.take(v, loose); ok {
					res.Items[idx].Err, errLeft[i] = e.err, false
				}
			}
		}
	}
	for i, j := range jobs {
		if !jobLeft[i] {
			continue
		}
		if idx, ok := m.next(); ok {
			res.Items[idx].Job = j
		} else {
			res.UnmatchedJobs = append(res.UnmatchedJobs, j)
		}
	}
	for i, e := range errs {
		if !errLeft[i] {
			continue
		}
		if idx, ok := m.next(); ok {
			res.Items[idx].Err = e.err
		} else {
			res.UnmatchedErrors = append(res.UnmatchedErrors, e.err)
		}
	}
	for i, done := range m.assigned {
		if !done {
			res.Items[i].Err = &APIError{StatusCode: 202, Message: NeitherMessage}
		}
	}
	return res
}

// echoedInput is the job object's value of the batch's input key.
func echoedInput(j Job, inputKey string) string {
	v, _ := jsonscan.Member(j.Raw, inputKey)
	s, _ := jsonscan.String(v)
	return s
}

// errorValue is the input value an "errors" entry names: the batch's input
// key first, then any of url, query and prompt.
func errorValue(e batchError, inputKey string) (string, bool) {
	if v, ok := e.values[inputKey]; ok {
		return v, true
	}
	for _, k := range []string{"url", "query", "prompt"} {
		if v, ok := e.values[k]; ok {
			return v, true
		}
	}
	return "", false
}
