package ledger

import (
	"errors"
	"strings"
	"testing"
)

func TestJoinFailuresTellsRunsOnce(t *testing.T) {
	gone := errors.New("server gone")
	// In the order AppendBatch may meet them: the window's entries are
	// awaited after later ones failed at once.
	failures := []entryFailure{
		{index: 7, subject: "quota.events.b", err: ErrAckTimeout},
		{index: 2, subject: "quota.events.a", err: ErrInvalidMsgID},
		{index: 5, subject: "quota.events.a", err: ErrAckTimeout},
		{index: 6, subject: "quota.events.b", err: ErrAckTimeout},
		{index: 9, subject: "quota.events.a", err: gone},
		{index: 10, subject: "quota.events.a", err: gone},
		{index: 12, subject: "quota.events.c", err: gone},
	}
	err := joinFailures(failures)
	want := strings.Join([]string{
		"entry 2 quota.events.a: " + ErrInvalidMsgID.Error(),
		"entries 5 to 7 (3, on 2 subjects): " + ErrAckTimeout.Error(),
		"entries 9 to 10 (2, on quota.events.a): server gone",
		// Not consecutive with 10: a run of its own.
		"entry 12 quota.events.c: server gone",
	}, "\n")
	if err.Error() != want {
		t.Fatalf("got\n%v\nwant\n%s", err, want)
	}
	for _, e := range []error{ErrAckTimeout, ErrInvalidMsgID, gone} {
		if !errors.Is(err, e) {
			t.Errorf("the joined error does not wrap %v", e)
		}
	}
}
