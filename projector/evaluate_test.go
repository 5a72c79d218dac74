package projector

import (
	"path/filepath"
	"reflect"
	"testing"
)

// TestEqualChargesShareTheirFigures folds the recorded samples and checks
// that the stored records whose charges encode alike hold one map of
// figures between them, and that records of other charges do not.
func TestEqualChargesShareTheirFigures(t *testing.T) {
	dirs, _ := filepath.Glob(filepath.Join(samplesDir, "sample-*"))
	p := openTemp(t)
	var seq uint64
	for _, dir := range dirs {
		recs := sampleRecords(t, dir)
		for i := range recs {
			seq++
			recs[i].Seq = seq
		}
		applyAll(t, p, recs, 100)
	}
	maps := map[string]uintptr{}
	shared := 0
	err := p.View().Bucket(bucketObjects).AscendValues(nil, func(k []byte, v any) (bool, error) {
		r := v.(*objectRecord)
		if len(r.Charge.Usage) == 0 {
			return true, nil
		}
		key := string(appendCharge(nil, &r.Charge))
		ptr := reflect.ValueOf(r.Charge.Usage).Pointer()
		if held, ok := maps[key]; !ok {
			maps[key] = ptr
		} else if held != ptr {
			t.Errorf("%s: an equal charge with figures of its own", k)
		} else {
			shared++
		}
		return true, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if shared == 0 {
		t.Fatal("no two stored objects have equal charges: the samples test nothing")
	}
	seen := map[uintptr]string{}
	for key, ptr := range maps {
		if other, ok := seen[ptr]; ok && other != key {
			t.Errorf("charges %q and %q share one map of figures", key, other)
		}
		seen[ptr] = key
	}
	t.Logf("%d distinct charges, %d records sharing one", len(maps), shared)
}
