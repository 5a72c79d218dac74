package ledger

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"
)

func TestSurviveRecoversAndReports(t *testing.T) {
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	var got error
	func() {
		defer Survive(log, "decide web-1", func(err error) { got = err })
		panic("a bug")
	}()
	if !errors.Is(got, ErrInternal) || got.Error() != "internal error: decide web-1: panic: a bug" {
		t.Fatalf("fail got %v, want ErrInternal naming the work and the panic", got)
	}
	if s := logs.String(); !strings.Contains(s, "level=ERROR") || !strings.Contains(s, "survive_test.go") {
		t.Errorf("the log lacks the error or the stack:\n%s", s)
	}

	got = nil
	func() {
		defer Survive(log, "nothing wrong", func(err error) { got = err })
	}()
	if got != nil {
		t.Errorf("fail called without a panic: %v", got)
	}
}
