package runlog

import (
	"bufio"
	"context"
	"fmt"
	"io"

	"github.com/oxypipe/oxypipe/pkg/oxytype"
)

// Spec says which run log to derive: how many payloads the run has and the
// data type at which a doc is done.
type Spec struct {
	// Total is the run's payload count: the log has lines for docs
	// "0" … Total-1.
	Total int
	// FinalDataType is the stage whose success makes a doc done
	// (normally oxytype.FinalDataType).
	FinalDataType oxytype.DataType
}

// Source streams a run's ledger records in document order, as
// jobresults.RecordReader.ForEachRecord does: the records of one doc
// together, docs whose ids are positions in increasing order, other docs
// anywhere. An error from fn must stop the iteration and be returned.
type Source func(ctx context.Context, fn func(Record) error) error

// Summary counts what a pass over a run's records found.
type Summary struct {
	// Lines is the number of lines (Total).
	Lines int
	// Counts of lines by state; they add up to Lines.
	Done, Faulted, Rejected, Unsubmitted, Unfetched int
	// Resolved counts the docs of the run with a final outcome (done or a
	// hard failure), each once.
	Resolved int
	// Unidentified counts docs of the ledger that are not positions of the
	// run: records of undecodable messages (an unknown-doc id) and positions
	// beyond Total. They have no line.
	Unidentified int
}

func (s *Summary) add(l Line, resolved bool) {
	s.Lines++
	if resolved {
		s.Resolved++
	}
	switch l.State {
	case oxytype.Done:
		s.Done++
	case oxytype.Faulted:
		s.Faulted++
	case oxytype.Rejected:
		s.Rejected++
	case oxytype.Unsubmitted:
		s.Unsubmitted++
	case oxytype.Unfetched:
		s.Unfetched++
	}
}

// Walk derives the line of every doc 0 … Total-1 from src, in input order,
// and calls emit with each (emit may be nil to only count). A doc without
// records gets its line too (see Derive): a run log never drops a payload.
func Walk(ctx context.Context, spec Spec, src Source, emit func(Line) error) (Summary, error) {
	if emit == nil {
		return Visit(ctx, spec, src, nil)
	}
	return Visit(ctx, spec, src, func(d Doc) error { return emit(d.Line) })
}

// Doc is one doc's line as Visit derives it, with its position and whether
// the doc is resolved (see Derive).
type Doc struct {
	Pos      int
	Line     Line
	Resolved bool
}

// Visit is Walk for callers that need each line's position and whether its
// doc is resolved, such as one that records the docs still in flight when
// a stopped run must end.
func Visit(ctx context.Context, spec Spec, src Source, visit func(Doc) error) (Summary, error) {
	var (
		sum     Summary
		next    int // the next position without a line
		cur     []Record
		curDoc  string
		curPos  = -1
		haveDoc bool
	)
	out := func(pos int, l Line, resolved bool) error {
		sum.add(l, resolved)
		if visit == nil {
			return nil
		}
		return visit(Doc{Pos: pos, Line: l, Resolved: resolved})
	}
	fillTo := func(pos int) error {
		for ; next < pos; next++ {
			l, _ := Derive(spec.FinalDataType, nil)
			if err := out(next, l, false); err != nil {
				return err
			}
		}
		return nil
	}
	flush := func() error {
		if !haveDoc {
			return nil
		}
		haveDoc = false
		if curPos < 0 || curPos >= spec.Total {
			sum.Unidentified++
			return nil
		}
		if curPos < next {
			return fmt.Errorf("runlog: records of doc %q arrived out of document order", curDoc)
		}
		if err := fillTo(curPos); err != nil {
			return err
		}
		l, resolved := Derive(spec.FinalDataType, cur)
		next = curPos + 1
		return out(curPos, l, resolved)
	}
	err := src(ctx, func(r Record) error {
		if !haveDoc || r.Doc != curDoc {
			if err := flush(); err != nil {
				return err
			}
			cur, curDoc, curPos, haveDoc = cur[:0], r.Doc, position(r.Doc), true
		}
		cur = append(cur, r)
		return nil
	})
	if err != nil {
		return sum, err
	}
	if err := flush(); err != nil {
		return sum, err
	}
	if err := fillTo(spec.Total); err != nil {
		return sum, err
	}
	return sum, nil
}

// Build writes the run log of spec from src to w (buffered), and returns
// what it wrote.
func Build(ctx context.Context, w io.Writer, spec Spec, src Source) (Summary, error) {
	bw := bufio.NewWriterSize(w, 64<<10)
	lw := NewWriter(bw)
	sum, err := Walk(ctx, spec, src, lw.WriteLine)
	if err != nil {
		return sum, err
	}
	return sum, bw.Flush()
}

// position returns the input position a doc id stands for, or -1 when it is
// not the canonical decimal form of one ("7", not "07", "+7" or "?S:1").
func position(doc string) int {
	if doc == "" || len(doc) > 18 || (len(doc) > 1 && doc[0] == '0') {
		return -1
	}
	n := 0
	for i := 0; i < len(doc); i++ {
		c := doc[i]
		if c < '0' || c > '9' {
			return -1
		}
		n = n*10 + int(c-'0')
	}
	return n
}
