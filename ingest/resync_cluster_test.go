package ingest_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/quotaledger/quota/ingest"
)

// TestResyncClusterScoped: a cluster-scoped resync that names its resource
// is one group in the cluster scope even when empty, and refuses a
// namespaced object or a namespace.
func TestResyncClusterScoped(t *testing.T) {
	const classes = `{"apiVersion":"storage.k8s.io/v1","kind":"StorageClass","metadata":{"name":"fast"},"provisioner":"x"}`
	cases := []struct {
		name     string
		input    string
		opts     ingest.ResyncOptions
		groups   []ingest.ResyncGroup
		rejected int
		wantErr  error
	}{
		{
			name:   "an empty list removes every object of the resource",
			input:  `{"apiVersion":"v1","kind":"List","items":[]}`,
			opts:   ingest.ResyncOptions{Resource: "storageclasses.storage.k8s.io", ClusterScoped: true},
			groups: []ingest.ResyncGroup{{Namespace: "", Resource: "storageclasses.storage.k8s.io", Items: 0}},
		},
		{
			name:   "its objects are listed",
			input:  classes,
			opts:   ingest.ResyncOptions{Resource: "storageclasses.storage.k8s.io", ClusterScoped: true},
			groups: []ingest.ResyncGroup{{Namespace: "", Resource: "storageclasses.storage.k8s.io", Items: 1}},
		},
		{
			name:     "a namespaced object refuses the list",
			input:    `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","namespace":"team-a"}}`,
			opts:     ingest.ResyncOptions{Resource: "pods", ClusterScoped: true},
			groups:   []ingest.ResyncGroup{{Namespace: "", Resource: "pods", Items: 0}},
			rejected: 2, // the record and the refused group
		},
		{
			name:    "a namespace contradicts the cluster scope",
			input:   classes,
			opts:    ingest.ResyncOptions{Namespace: "team-a", Resource: "storageclasses.storage.k8s.io", ClusterScoped: true},
			wantErr: ingest.ErrInvalidOptions,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in, _ := newIngester(t, ingest.Options{})
			rep, err := in.Resync(context.Background(), "list.json", strings.NewReader(tc.input), tc.opts)
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("err = %v, want %v", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if rep.Rejected != tc.rejected {
				t.Errorf("rejected = %d, want %d: %v", rep.Rejected, tc.rejected, rep.Rejections)
			}
			if len(rep.Groups) != len(tc.groups) {
				t.Fatalf("groups = %+v, want %+v", rep.Groups, tc.groups)
			}
			for i, g := range rep.Groups {
				want := tc.groups[i]
				if g.Namespace != want.Namespace || g.Resource != want.Resource || g.Items != want.Items {
					t.Errorf("group %d = %+v, want %+v", i, g, want)
				}
				if (g.Seq != 0) != (tc.rejected == 0) {
					t.Errorf("group %d seq %d with %d rejections", i, g.Seq, tc.rejected)
				}
			}
		})
	}
}
