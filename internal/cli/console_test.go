package cli

import (
	"fmt"
	"strings"
	"testing"
)

func TestConsole(t *testing.T) {
	t.Parallel()
	t.Run("off a terminal, progress is a line each time", func(t *testing.T) {
		t.Parallel()
		var b strings.Builder
		c := newConsole(Env{Stderr: &b})
		c.progress("1/3 done, 2 pending, 10.00s")
		warnf(c, "job %s is pending", "1")
		c.final("3/3 done, 3 written, 12.00s")
		want := "1/3 done, 2 pending, 10.00s\nwarning: job 1 is pending\n3/3 done, 3 written, 12.00s\n"
		if b.String() != want || c.interval() != lineInterval {
			t.Errorf("got %q, want %q", b.String(), want)
		}
	})
	t.Run("on a terminal, progress is one line redrawn under the other lines", func(t *testing.T) {
		t.Parallel()
		var b strings.Builder
		c := newConsole(Env{Stderr: &b, Terminal: true})
		c.progress("0/3 done, 3 pending, 312ms")
		c.progress("1/3 done, 2 pending, 1.00s")
		fmt.Fprintln(c, "Job 2 faulted: universal https://x")
		c.final("1/3 done, 1 faulted, 1.20s")
		want := "\r\x1b[K0/3 done, 3 pending, 312ms" +
			"\r\x1b[K1/3 done, 2 pending, 1.00s" +
			"\r\x1b[KJob 2 faulted: universal https://x\n1/3 done, 2 pending, 1.00s" +
			"\r\x1b[K1/3 done, 1 faulted, 1.20s\n"
		if b.String() != want || c.interval() != liveInterval {
			t.Errorf("got %q\nwant %q", b.String(), want)
		}
	})
	t.Run("a job line on a shared terminal clears the live line first", func(t *testing.T) {
		t.Parallel()
		var b strings.Builder
		c := newConsole(Env{Stderr: &b, Terminal: true, StdoutTerminal: true})
		c.progress("0/1 done, 1 pending, 1.00s")
		c.aroundStdout(func() { b.WriteString(`{"id":"1"}` + "\n") })
		want := "\r\x1b[K0/1 done, 1 pending, 1.00s\r\x1b[K{\"id\":\"1\"}\n0/1 done, 1 pending, 1.00s"
		if b.String() != want {
			t.Errorf("got %q\nwant %q", b.String(), want)
		}
	})
}
