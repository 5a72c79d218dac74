package object

import (
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/quotaledger/quota/ledger/jsonscan"
)

// decodeTyped is Decode for any object, through unmarshal into the
// k8s.io/api type of its kind, read first from the top-level keys
// (typeMeta) so that the value is decoded in one pass, its identity taken
// from its metadata. The header is decoded on its own where typeMeta
// cannot vouch for the kind, and where the value does not decode (to word
// the error as the API server does).
func decodeTyped(b []byte) (*Object, error) {
	var h header
	var v runtime.Object
	if apiVersion, kind, ok := typeMeta(b); ok {
		gv, err := schema.ParseGroupVersion(apiVersion)
		if info := knownKinds[groupKind{gv.Group, kind}]; err == nil && info.decode != nil {
			if v, err = info.decode(b, apiVersion); err == nil {
				h.APIVersion, h.Kind = apiVersion, kind
				h.Metadata = metaOf(v.(metav1.Object))
			}
		}
	}
	if v == nil {
		hp, err := unmarshal[header](b)
		if err != nil {
			return nil, fmt.Errorf("decode object: %w: %v", ErrMalformed, err)
		}
		h = *hp
	}
	o, info, err := identify(&h)
	if err != nil {
		return nil, err
	}
	if v == nil && info.decode != nil {
		if v, err = info.decode(b, h.APIVersion); err != nil {
			// After the colon, the API server's own words for an object
			// it cannot decode.
			version := h.APIVersion[strings.LastIndexByte(h.APIVersion, '/')+1:]
			return nil, fmt.Errorf("decode %s %q: %w: %s in version %q cannot be handled as a %s: %v",
				h.Kind, o.displayName(), ErrMalformed, h.Kind, version, h.Kind, err)
		}
	}
	if v != nil {
		o.Value = v
		o.syncMeta()
	}
	return o, nil
}

// metaOf is the header's metadata of a typed value.
func metaOf(m metav1.Object) headerMeta {
	return headerMeta{
		Name: m.GetName(), GenerateName: m.GetGenerateName(), Namespace: m.GetNamespace(), UID: string(m.GetUID()),
		ResourceVersion: m.GetResourceVersion(), DeletionTimestamp: m.GetDeletionTimestamp(),
		DeletionGracePeriodSeconds: m.GetDeletionGracePeriodSeconds(),
	}
}

// typeMeta reads the apiVersion and kind of a JSON object from its
// top-level keys, skipping the other values. It reports ok only when both
// are plain strings under their exact keys and no other top-level key
// could decode as either: encoding/json matches keys without regard to
// case and keeps the last of repeated ones.
func typeMeta(b []byte) (apiVersion, kind string, ok bool) {
	s := jsonscan.New(b)
	var haveVersion, haveKind bool
	walked := s.Members(func(key []byte, plain bool) bool {
		switch {
		case !plain:
			return false
		case string(key) == "apiVersion":
			haveVersion = jsonscan.StringTo(s, &apiVersion)
			return haveVersion
		case string(key) == "kind":
			haveKind = jsonscan.StringTo(s, &kind)
			return haveKind
		case jsonscan.EqualFoldASCII(key, "apiVersion") || jsonscan.EqualFoldASCII(key, "kind"):
			return false
		}
		return s.Skip()
	})
	return apiVersion, kind, walked && haveVersion && haveKind
}
