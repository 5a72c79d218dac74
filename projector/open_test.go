package projector

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/quotaledger/quota/ledger"
	"github.com/quotaledger/quota/projector/projectortest"
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

// TestOpenRefusesDamagedFile damages one page in the middle of a
// projection file, its header or its contents, as a bad sector would.
// bbolt opens such a file and would panic at the first read reaching the
// page; Open's check refuses it instead, naming the file, the damage and
// how to rebuild, and leaves the file as it was.
func TestOpenRefusesDamagedFile(t *testing.T) {
	for _, tc := range []struct {
		name   string
		damage func(page []byte)
	}{
		{"header", func(page []byte) {
			for i := range 8 {
				page[i] = 0xff // the page's own id
			}
		}},
		{"contents", func(page []byte) {
			for i := 16; i < len(page); i++ {
				page[i] = byte(i*7 + 3)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "projection.db")
			p, err := Open(Config{Path: path, NoSync: true}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if err := p.Close(); err != nil {
				t.Fatal(err)
			}
			offset, size := fillLeafPages(t, path)
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			tc.damage(b[offset : offset+int64(size)])
			if err := os.WriteFile(path, b, 0o600); err != nil {
				t.Fatal(err)
			}
			_, err = Open(Config{Path: path, NoSync: true}, nil)
			if !errors.Is(err, ErrDamaged) {
				t.Fatalf("got %v, want ErrDamaged", err)
			}
			for _, want := range []string{path, "consistency check", "move it aside"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q lacks %q", err, want)
				}
			}
			if got, _ := os.ReadFile(path); !bytes.Equal(got, b) {
				t.Error("Open changed the damaged file")
			}
		})
	}
}

// fillLeafPages adds a bucket of many keys to the bbolt file at path, so
// that it holds leaf pages below the bucket's root, and returns where one
// of them is.
func fillLeafPages(t *testing.T, path string) (offset int64, size int) {
	t.Helper()
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	err = db.Update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucket([]byte("filler"))
		if err != nil {
			return err
		}
		for i := range 400 {
			if err := b.Put(fmt.Appendf(nil, "key-%04d", i), bytes.Repeat([]byte{'v'}, 300)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return projectortest.LeafPage(t, db, true)
}

// TestCheckpointMeetingADamagedPage damages the leaf holding a pod of a
// projection's file while it is in use, as a bad sector met while the
// server runs would: the fold, in memory, goes on applying; the next
// checkpoint writes that pod in place, bbolt panics on the page, and the
// checkpoint returns an error saying what may have happened (the process
// goes on, to stop cleanly). A checkpoint that changes most keys then
// writes a new file in the damaged one's place.
func TestCheckpointMeetingADamagedPage(t *testing.T) {
	path := filepath.Join(t.TempDir(), "projection.db")
	p, err := Open(Config{Path: path, NoSync: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	records := benchRecords(t, 2, 300)
	applyAll(t, p, records, len(records))
	last := records[len(records)-1]
	damagePagesHolding(t, p.DB(), path, objectKey(last.Namespace, last.Event.Resource, last.Event.Name))
	again := func(recs ...ledger.Record) {
		t.Helper()
		seq := p.Applied()
		for i := range recs {
			recs[i].Seq = seq + uint64(i) + 1
		}
		if err := p.Apply(t.Context(), recs); err != nil {
			t.Fatalf("Apply with the file damaged: %v; the live state is in memory", err)
		}
		if got, want := p.Applied(), recs[len(recs)-1].Seq; got != want {
			t.Errorf("applied seq %d, want %d", got, want)
		}
	}
	again(last)
	err = p.Checkpoint()
	if err == nil || !errors.Is(err, ErrWrite) || !strings.Contains(err.Error(), "damaged since it was opened") {
		t.Fatalf("a checkpoint over a damaged page: %v; want ErrWrite naming a damaged page as a cause", err)
	}
	// Every pod again, as updates.
	var pods []ledger.Record
	for _, rec := range records {
		if rec.Event.Type == ledger.Upsert && rec.Event.Resource == "pods" {
			pods = append(pods, rec)
		}
	}
	again(pods...)
	if err := p.Checkpoint(); err != nil {
		t.Fatalf("a checkpoint of most keys, in a new file: %v", err)
	}
	if err := Check(p.DB()); err != nil {
		t.Fatalf("the file a checkpoint wrote in the damaged one's place: %v", err)
	}
	if got, want := p.Checkpointed(), p.Applied(); got != want {
		t.Fatalf("checkpointed seq %d, want %d", got, want)
	}
}

// damagePagesHolding overwrites the header of every page of the file at
// path that holds key: reading one makes bbolt panic.
func damagePagesHolding(t *testing.T, db *bolt.DB, path string, key []byte) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	size := db.Info().PageSize
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	found := 0
	for at := 0; ; {
		i := bytes.Index(b[at:], key)
		if i < 0 {
			break
		}
		page := (at + i) / size
		if _, err := f.WriteAt(bytes.Repeat([]byte{0xff}, 16), int64(page*size)); err != nil {
			t.Fatal(err)
		}
		found++
		at = (page + 1) * size
	}
	if found == 0 {
		t.Fatalf("no page of %s holds %q", path, key)
	}
}

// TestOpenRecordsTheRules: a new file, or one that has applied nothing,
// records this build's RulesVersion; the version stays with the file.
func TestOpenRecordsTheRules(t *testing.T) {
	path := filepath.Join(t.TempDir(), "projection.db")
	p, err := Open(Config{Path: path, NoSync: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := p.Rules(); got != RulesVersion {
		t.Fatalf("new file: rules %d, want %d", got, RulesVersion)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		if v := tx.Bucket(bucketMeta).Get(keyRules); len(v) != 8 {
			return fmt.Errorf("rules not recorded: %x", v)
		}
		// As a build before the version was recorded leaves a file that
		// has applied nothing.
		return tx.Bucket(bucketMeta).Delete(keyRules)
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	p, err = Open(Config{Path: path, NoSync: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if got := p.Rules(); got != RulesVersion {
		t.Fatalf("a file that has applied nothing: rules %d, want %d", got, RulesVersion)
	}
}
