package payload

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// MaxBatch is the most values one POST /v1/queries/batch may carry.
const MaxBatch = 5000

// ErrNotBatchable is returned by BatchBody for a group that cannot form one
// batch request.
var ErrNotBatchable = errors.New("payloads cannot form one batch")

// IsBatchInputKey reports whether a list of values in key is accepted by
// /v1/queries/batch: url, query, and prompt for LLM sources.
func IsBatchInputKey(key string) bool {
	return key == "url" || key == "query" || key == "prompt"
}

// Batchable reports whether the payload may go to /v1/queries/batch: its one
// input is a url, query or prompt string and no key is set twice. Whether
// the source accepts batches is only known from the API's answer ("Source
// `X` is not available with a batch request."); callers remember that per
// source.
func (p Payload) Batchable() bool {
	key, ok := p.singleInputKey()
	if !ok || !IsBatchInputKey(key) {
		return false
	}
	if _, isString := p.GetString(key); !isString {
		return false
	}
	_, dup := p.duplicateKey()
	return !dup
}

// BatchKey returns a key shared by exactly the payloads that are identical
// apart from the value of their batch input, so that they can be sent
// together; the order of keys does not matter. It returns "" when the
// payload is not Batchable.
func (p Payload) BatchKey() string {
	if !p.Batchable() {
		return ""
	}
	key, _ := p.Input()
	others := make([]Field, 0, len(p.fields)-1)
	size := len(key) + 1
	for _, f := range p.fields {
		if f.Key != key {
			others = append(others, f)
			size += len(f.Key) + len(f.Value) + 2
		}
	}
	slices.SortFunc(others, func(a, b Field) int { return strings.Compare(a.Key, b.Key) })
	var sb strings.Builder
	sb.Grow(size)
	sb.WriteString(key)
	sb.WriteByte(0)
	for _, f := range others {
		sb.WriteString(f.Key)
		sb.WriteByte(0)
		sb.Write(f.Value)
		sb.WriteByte(0)
	}
	return sb.String()
}

// BatchBody returns the body of one POST /v1/queries/batch for a group of
// payloads sharing a BatchKey: the first payload's fields in their order,
// with its input replaced by the list of every payload's input value, in
// the group's order (duplicates kept; each becomes its own job).
func BatchBody(group []Payload) ([]byte, error) {
	if len(group) == 0 {
		return nil, fmt.Errorf("%w: the group is empty", ErrNotBatchable)
	}
	if len(group) > MaxBatch {
		return nil, fmt.Errorf("%w: %d values, more than %d", ErrNotBatchable, len(group), MaxBatch)
	}
	want := group[0].BatchKey()
	if want == "" {
		return nil, fmt.Errorf("%w: payload 0 has no single url, query or prompt string", ErrNotBatchable)
	}
	inputKey, _ := group[0].Input()
	list := make([]byte, 0, 64*len(group))
	list = append(list, '[')
	for i, p := range group {
		if i > 0 {
			if p.BatchKey() != want {
				return nil, fmt.Errorf("%w: payload %d differs from payload 0 in more than its %s", ErrNotBatchable, i, inputKey)
			}
			list = append(list, ',')
		}
		raw, _ := p.Get(inputKey)
		list = append(list, raw...)
	}
	list = append(list, ']')
	return group[0].appendJSON(nil, inputKey, list), nil
}

// BatchSize returns how many payloads of the group one batch may carry under
// a rate limit of limit jobs per window: the smallest ⌊limit/pages⌋ over the
// group, clamped to 1..MaxBatch, because every page of every value counts
// against the limit and a batch over the remaining budget is refused whole.
// A limit of 0 or less means unlimited. Pass the rendered limit for
// payloads that are Rendered.
func BatchSize(limit int, group []Payload) int {
	if limit <= 0 {
		return MaxBatch
	}
	size := MaxBatch
	for _, p := range group {
		size = min(size, limit/p.Pages())
	}
	return max(1, size)
}

// GroupBatches partitions payloads into groups that may share a batch,
// returning indexes into ps. Groups keep input order and appear in the order
// of their first member; a payload that is not Batchable forms a group of
// its own. Groups are not split by size; see BatchSize.
func GroupBatches(ps []Payload) [][]int {
	var groups [][]int
	byKey := make(map[string]int)
	for i, p := range ps {
		key := p.BatchKey()
		if key == "" {
			groups = append(groups, []int{i})
			continue
		}
		if g, ok := byKey[key]; ok {
			groups[g] = append(groups[g], i)
			continue
		}
		byKey[key] = len(groups)
		groups = append(groups, []int{i})
	}
	return groups
}

// singleInputKey returns the input key when exactly one is set.
func (p Payload) singleInputKey() (string, bool) {
	found := ""
	for _, f := range p.fields {
		if IsInputKey(f.Key) {
			if found != "" {
				return "", false
			}
			found = f.Key
		}
	}
	return found, found != ""
}
