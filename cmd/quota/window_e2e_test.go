package main

import (
	"context"
	"errors"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/quotaledger/quota/ledger"
)

// TestDuplicateWindowFlag starts serve with --duplicate-window 2m and
// reads the event stream's window back from JetStream; a restart on the
// same data without the flag puts the default back. A window that is not
// a positive duration stops serve before it serves, naming the flag.
func TestDuplicateWindowFlag(t *testing.T) {
	window := func(s *ledgerProc) time.Duration {
		t.Helper()
		js := jetStreamAt(t, s.url)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		st, err := js.Stream(ctx, ledger.DefaultStreamName)
		if err != nil {
			t.Fatal(err)
		}
		info, err := st.Info(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return info.Config.Duplicates
	}
	data := t.TempDir()
	s := startServer(t, data, "--duplicate-window", "2m")
	if got := window(s); got != 2*time.Minute {
		t.Errorf("with --duplicate-window 2m: the stream's window is %s", got)
	}
	s.stop()
	s = startServer(t, data)
	if got := window(s); got != ledger.DefaultDuplicateWindow {
		t.Errorf("restarted without the flag: the stream's window is %s, want %s", got, ledger.DefaultDuplicateWindow)
	}
	s.stop()

	for _, bad := range []string{"0s", "-1h", "a day"} {
		cmd := exec.Command(binary, "serve", "--data", t.TempDir(), "--listen", "127.0.0.1:0", "--duplicate-window", bad)
		msg, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(string(msg), "--duplicate-window") {
			t.Errorf("serve --duplicate-window %q: %v\n%s\nwant exit 2 naming the flag", bad, err, msg)
		}
	}
}
