package core

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// MaxNameLen is the longest name a destination accepts, in bytes. It leaves
// room below the common 255-byte file-name limit for the temporary name a
// local Put writes first.
const MaxNameLen = 200

// ValidateName checks that name is a plain file name: not empty, at most
// MaxNameLen bytes of UTF-8, no path separator, no control character, and not
// starting with "." (which also rules out "." and ".."; names starting with a
// dot are reserved for temporary files).
func ValidateName(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("%w: empty", ErrInvalidName)
	case len(name) > MaxNameLen:
		return fmt.Errorf("%w: %d bytes, longer than %d", ErrInvalidName, len(name), MaxNameLen)
	case !utf8.ValidString(name):
		return fmt.Errorf("%w %q: not UTF-8", ErrInvalidName, name)
	case strings.HasPrefix(name, "."):
		return fmt.Errorf("%w %q: must not start with \".\"", ErrInvalidName, name)
	case strings.ContainsAny(name, `/\`):
		return fmt.Errorf("%w %q: must be a plain file name without a path separator", ErrInvalidName, name)
	}
	for _, r := range name {
		if r < 0x20 || r == 0x7f {
			return fmt.Errorf("%w %q: contains a control character", ErrInvalidName, name)
		}
	}
	return nil
}
