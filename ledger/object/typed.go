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
// (typedValue) so that the value is decoded in one pass, its identity
// taken from its metadata. The header is decoded on its own where the keys
// cannot vouch for the kind, and where the value does not decode (to word
// the error as the API server does).
func decodeTyped(b []byte) (*Object, error) {
	var h header
	v, apiVersion, kind := typedValue(b)
	if v != nil {
		h.APIVersion, h.Kind = apiVersion, kind
		h.Metadata = metaOf(v.(metav1.Object))
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

// typedValue decodes b into the type of its kind, the kind read from its
// leading keys where the value decoded agrees, from all of them otherwise;
// nil where neither vouches for a kind kept typed, or b does not decode as
// it.
func typedValue(b []byte) (v runtime.Object, apiVersion, kind string) {
	headVersion, headKind, head := "", "", false
	if headFirst {
		if headVersion, headKind, head = typeMeta(b, true); head {
			// The head does not see the keys after it: the value's own
			// apiVersion and kind (the last of repeated keys, matched
			// without regard to case, as encoding/json reads them) must
			// be the head's, or all the keys decide.
			if v = decodeKnown(b, headVersion, headKind); v != nil && hasTypeMeta(v, headVersion, headKind) {
				return v, headVersion, headKind
			}
		}
	}
	apiVersion, kind, ok := typeMeta(b, false)
	if !ok || head && apiVersion == headVersion && kind == headKind {
		// The same kind would not decode a second time either.
		return nil, "", ""
	}
	if v = decodeKnown(b, apiVersion, kind); v == nil {
		return nil, "", ""
	}
	return v, apiVersion, kind
}

// headFirst makes decodeTyped read the leading keys first. A
// variable for the tests, which compare the two ways.
var headFirst = true

// decodeKnown decodes b into the k8s.io/api type of a kind the ledger
// keeps typed; nil for another kind, or if b does not decode as it.
func decodeKnown(b []byte, apiVersion, kind string) runtime.Object {
	gv, err := schema.ParseGroupVersion(apiVersion)
	info := knownKinds[groupKind{gv.Group, kind}]
	if err != nil || info.decode == nil {
		return nil
	}
	v, err := info.decode(b, apiVersion)
	if err != nil {
		return nil
	}
	return v
}

// hasTypeMeta says whether the decoded value v holds apiVersion and kind.
func hasTypeMeta(v runtime.Object, apiVersion, kind string) bool {
	tm, ok := v.GetObjectKind().(*metav1.TypeMeta)
	return ok && tm.APIVersion == apiVersion && tm.Kind == kind
}

// typeMeta reads the apiVersion and kind of a JSON object from its
// top-level keys, skipping the other values. It reports ok only when both
// are plain strings under their exact keys and no key read could decode
// as either: encoding/json matches keys without regard to case and keeps
// the last of repeated ones. With head it stops at the later of the two,
// which the API server writes first, so that for its objects the rest is
// read once, by the typed decode; what it reads then holds only if the
// value decoded agrees (typedValue checks).
func typeMeta(b []byte, head bool) (apiVersion, kind string, ok bool) {
	s := jsonscan.New(b)
	var haveVersion, haveKind, failed bool
	walked := s.Members(func(key []byte, plain bool) bool {
		switch {
		case !plain:
			failed = true
		case string(key) == "apiVersion":
			haveVersion = jsonscan.StringTo(s, &apiVersion)
			failed = !haveVersion
		case string(key) == "kind":
			haveKind = jsonscan.StringTo(s, &kind)
			failed = !haveKind
		case jsonscan.EqualFoldASCII(key, "apiVersion") || jsonscan.EqualFoldASCII(key, "kind"):
			failed = true
		default:
			failed = !s.Skip()
		}
		return !failed && !(head && haveVersion && haveKind)
	})
	return apiVersion, kind, !failed && haveVersion && haveKind && (walked || head)
}
