package stage

import (
	"context"
	"time"
)

// group is the batch a batch worker is filling. It goes to the handler when
// it holds Config.BatchSize messages, or Config.BatchLinger after its first
// message came, whichever is first. It lives across fetches: the fetch loop
// asks for no more messages than the group has room for (and it has free
// slots), so at steady state, with slots freeing up a few at a time as the
// previous batch settles, a group still fills up instead of going out with
// whatever one small fetch brought.
//
// A group is used by the fetch loop's goroutine only.
type group struct {
	w       *Worker
	workCtx context.Context
	msgs    []*Msg
	linger  *time.Timer
}

// room is how many more messages the group can take.
func (g *group) room() int { return g.w.cfg.BatchSize - len(g.msgs) }

// add puts m in the group, starting the linger with the first message and
// sending the group off when it is full.
func (g *group) add(m *Msg) {
	g.msgs = append(g.msgs, m)
	if g.room() <= 0 {
		g.flush()
		return
	}
	if g.linger == nil {
		g.linger = time.NewTimer(g.w.cfg.BatchLinger)
	}
}

// lingerC fires when the group's linger ends; it is nil (never ready) while
// the group is empty.
func (g *group) lingerC() <-chan time.Time {
	if g.linger == nil {
		return nil
	}
	return g.linger.C
}

// flush hands the group to the handler, if it holds anything.
func (g *group) flush() {
	if g.linger != nil {
		g.linger.Stop()
		g.linger = nil
	}
	if len(g.msgs) > 0 {
		g.w.dispatch(g.workCtx, g.msgs, false)
		g.msgs = nil
	}
}
