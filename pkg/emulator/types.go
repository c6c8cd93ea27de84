package emulator

import "strings"

// outputType is one of the result types a job can return.
type outputType uint8

const (
	typeRaw outputType = iota
	typeParsed
	typePNG
	typeMarkdown
	typeXHR
	numTypes
)

func (t outputType) String() string {
	return [numTypes]string{"raw", "parsed", "png", "markdown", "xhr"}[t]
}

func parseType(s string) (outputType, bool) {
	for t := typeRaw; t < numTypes; t++ {
		if t.String() == s {
			return t, true
		}
	}
	return 0, false
}

// typeSet is a set of output types.
type typeSet uint8

func (s typeSet) has(t outputType) bool { return s&(1<<t) != 0 }

// defaultType is what /results returns without ?type=. When a job has both
// render png and parse, png wins, as in the one live capture.
func (s typeSet) defaultType() outputType {
	for _, t := range [...]outputType{typePNG, typeParsed, typeMarkdown, typeXHR} {
		if s.has(t) {
			return t
		}
	}
	return typeRaw
}

// requestedTypes parses a ?type= comma list into dst, in order, without
// duplicates or unknown names; none means the job's default type.
func requestedTypes(dst []outputType, list string, def outputType) []outputType {
	var seen typeSet
	for list != "" {
		name := list
		if i := strings.IndexByte(list, ','); i >= 0 {
			name, list = list[:i], list[i+1:]
		} else {
			list = ""
		}
		if t, ok := parseType(strings.TrimSpace(name)); ok && !seen.has(t) {
			seen |= 1 << t
			dst = append(dst, t)
		}
	}
	if len(dst) == 0 {
		dst = append(dst, def)
	}
	return dst
}
