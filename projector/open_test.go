package projector

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// TestOpenRefusesUnreadableFile opens a file that is not a bbolt file: the
// error names the file and says how to rebuild it, and the file is left
// as it was, for whoever wants to look at it.
func TestOpenRefusesUnreadableFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "projection.db")
	junk := bytes.Repeat([]byte("not a projection "), 4096)
	if err := os.WriteFile(path, junk, 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := Open(Config{Path: path, NoSync: true}, nil)
	if !errors.Is(err, ErrUnreadable) {
		t.Fatalf("got %v, want ErrUnreadable", err)
	}
	for _, want := range []string{path, "move it aside"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	if got, _ := os.ReadFile(path); !bytes.Equal(got, junk) {
		t.Error("Open changed the unreadable file")
	}
}

// TestOpenRefusesAnotherSchema opens a projection written by a later
// layout: the error gives both versions and how to rebuild.
func TestOpenRefusesAnotherSchema(t *testing.T) {
	path := filepath.Join(t.TempDir(), "projection.db")
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists(bucketMeta)
		if err != nil {
			return err
		}
		return b.Put(keySchema, seqBytes(SchemaVersion+1))
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	_, err = Open(Config{Path: path, NoSync: true}, nil)
	if !errors.Is(err, ErrSchemaVersion) {
		t.Fatalf("got %v, want ErrSchemaVersion", err)
	}
	if !strings.Contains(err.Error(), "move it aside") {
		t.Errorf("error %q does not say how to rebuild", err)
	}
}
