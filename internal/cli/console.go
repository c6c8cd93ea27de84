package cli

import (
	"io"
	"strings"
	"sync"
	"time"
)

// Progress cadence: a terminal's live line is redrawn often; elsewhere (a
// log file, CI) a line is printed every 10 seconds, often enough to follow a
// long run and rare enough not to flood its log.
const (
	liveInterval = 250 * time.Millisecond
	lineInterval = 10 * time.Second
)

// console is stderr during a run: permanent lines (warnings, hints, the
// report) and, on a terminal, one live progress line redrawn in place under
// them. It is an io.Writer for the permanent lines and safe for concurrent
// use.
type console struct {
	mu sync.Mutex
	w  io.Writer
	// live: stderr is a terminal, so progress is redrawn with "\r".
	live bool
	// sharedStdout: stdout is the same terminal, so the live line is cleared
	// around each job line.
	sharedStdout bool
	shown        string // the live line on screen, "" when none
}

func newConsole(env Env) *console {
	return &console{w: env.Stderr, live: env.Terminal, sharedStdout: env.Terminal && env.StdoutTerminal}
}

// eraseLine returns to the start of the line and clears it (ANSI EL).
const eraseLine = "\r\x1b[K"

// Write prints permanent lines above the live line.
func (c *console) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var b strings.Builder
	if c.shown != "" {
		b.WriteString(eraseLine)
	}
	b.Write(p)
	if c.shown != "" {
		b.WriteString(c.shown)
	}
	if _, err := io.WriteString(c.w, b.String()); err != nil {
		return 0, err
	}
	return len(p), nil
}

// progress shows a progress line: redrawn in place on a terminal, else
// printed as a line.
func (c *console) progress(line string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.live {
		_, _ = io.WriteString(c.w, line+"\n") // stderr that cannot be written has no one to tell
		return
	}
	_, _ = io.WriteString(c.w, eraseLine+line)
	c.shown = line
}

// final prints the last progress line for good, replacing the live one.
func (c *console) final(line string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	prefix := ""
	if c.shown != "" {
		prefix = eraseLine
	}
	c.shown = ""
	_, _ = io.WriteString(c.w, prefix+line+"\n")
}

// aroundStdout runs write (a job line on stdout) with the live line cleared
// when stdout and stderr share the terminal.
func (c *console) aroundStdout(write func()) {
	if !c.sharedStdout {
		write()
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.shown != "" {
		_, _ = io.WriteString(c.w, eraseLine)
	}
	write()
	if c.shown != "" {
		_, _ = io.WriteString(c.w, c.shown)
	}
}

// interval is how often progress is shown.
func (c *console) interval() time.Duration {
	if c.live {
		return liveInterval
	}
	return lineInterval
}
