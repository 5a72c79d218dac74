package main

import (
	"errors"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// TestServeRefusesBadFlags starts serve with flag values it cannot run
// with: each exits 2 at once, naming the flag.
func TestServeRefusesBadFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		flag string
	}{
		{[]string{"--reservation-ttl", "0"}, "--reservation-ttl"},
		{[]string{"--reservation-ttl", "-1s"}, "--reservation-ttl"},
		{[]string{"--replicas", "0"}, "--replicas"},
		{[]string{"--replicas", "6"}, "--replicas"},
		{[]string{"--replicas", "3"}, "--replicas 3 needs a cluster: --cluster-listen and --routes"},
		{[]string{"--routes", "nats://127.0.0.1:6222"}, "--cluster-listen and --routes go together"},
		{[]string{"--cluster-listen", "127.0.0.1:6222", "--routes", "nats://a:6222,nats://b:6222", "--replicas", "3"}, "--replicas 3 with 2 members in --routes"},
		{[]string{"--nats", "nats://127.0.0.1:1", "--routes", "nats://a:6222"}, "--routes configures the embedded NATS server; with --nats there is none"},
		{[]string{"--tls-ca", "ca.pem"}, "secure the connection to --nats"},
		{[]string{"--nkey", "user.nk"}, "secure the connection to --nats"},
		{[]string{"--nats", "nats://127.0.0.1:1", "--listen", "127.0.0.1:4223"}, "--listen configures the embedded NATS server; with --nats there is none"},
		{[]string{"--nats", "nats://127.0.0.1:1", "--sync", "1s"}, "--sync configures the embedded NATS server; with --nats there is none"},
	} {
		args := []string{"serve", "--data", t.TempDir()}
		if !slices.Contains(tc.args, "--nats") {
			args = append(args, "--listen", "127.0.0.1:0")
		}
		args = append(args, tc.args...)
		msg, err := exec.Command(binary, args...).CombinedOutput()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != exitError || !strings.Contains(string(msg), tc.flag) {
			t.Errorf("serve %s: %v\n%s\nwant exit %d naming %q", strings.Join(tc.args, " "), err, msg, exitError, tc.flag)
		}
	}
}

func TestReplayRefusesBadFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--until-seq", "0"}, "--until-seq 0 would apply nothing"},
		{[]string{"--at", "yesterday"}, "want RFC 3339"},
		{[]string{"--at", "2026-11-22T14:03:00Z", "--until-seq", "3"}, "--until-seq and --at exclude each other"},
		{[]string{"--verify", "--until-seq", "3"}, "it takes no --until-seq or --at"},
		{[]string{"-n", "team", "-A"}, "-n and -A exclude each other"},
		{[]string{"--explain"}, "give it -n NS"},
	} {
		// No server runs there: each is refused before replay connects.
		args := append([]string{"replay", "--server", "nats://127.0.0.1:1"}, tc.args...)
		msg, err := exec.Command(binary, args...).CombinedOutput()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != exitError || !strings.Contains(string(msg), tc.want) {
			t.Errorf("replay %s: %v\n%s\nwant exit %d saying %q", strings.Join(tc.args, " "), err, msg, exitError, tc.want)
		}
	}
}
