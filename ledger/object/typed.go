package object

import (
	"encoding/json"

	"github.com/quotaledger/quota/ledger/jsonscan"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// decodeTyped is the general path for an object of a kind the ledger keeps
// a typed value of, in one encoding/json pass instead of two: the kind is
// read from the object's top-level keys alone (typeMeta), the typed value
// decoded, and the identity the header pass would have read taken from the
// value. It returns nil whenever that shortcut could differ from
// decodeGeneral (an unknown kind, a key typeMeta cannot vouch for, a
// decode error, whose message the general path words), and Decode then
// takes the general path. TestDecodeTypedMatchesGeneral and
// FuzzDecodeTyped hold it to building what decodeGeneral builds.
func decodeTyped(trimmed []byte) *Object {
	apiVersion, kind, ok := typeMeta(trimmed)
	if !ok {
		return nil
	}
	return decodeTypedAs(trimmed, apiVersion, kind)
}

// decodeTypedAs is decodeTyped once typeMeta has read apiVersion and kind.
func decodeTypedAs(trimmed []byte, apiVersion, kind string) *Object {
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		return nil
	}
	info, known := knownKinds[groupKind{gv.Group, kind}]
	if !known || info.newValue == nil {
		return nil
	}
	v := info.newValue()
	if err := json.Unmarshal(trimmed, v); err != nil {
		return nil
	}
	typed, ok := v.(metav1.Object)
	if !ok {
		return nil
	}
	// The typed decode read apiVersion and kind by encoding/json's rules;
	// they must be what typeMeta read.
	if gvk := v.GetObjectKind().GroupVersionKind(); gvk.Kind != kind || gvk.GroupVersion() != gv || gv.String() != apiVersion {
		return nil
	}
	var h header
	h.APIVersion, h.Kind = apiVersion, kind
	h.Metadata.Name = typed.GetName()
	h.Metadata.GenerateName = typed.GetGenerateName()
	h.Metadata.Namespace = typed.GetNamespace()
	h.Metadata.UID = string(typed.GetUID())
	h.Metadata.ResourceVersion = typed.GetResourceVersion()
	h.Metadata.DeletionTimestamp = typed.GetDeletionTimestamp()
	h.Metadata.DeletionGracePeriodSeconds = typed.GetDeletionGracePeriodSeconds()
	o, _, _, err := identify(&h)
	if err != nil {
		return nil
	}
	o.Value = v
	o.syncMeta()
	return o
}

// typeMeta reads the apiVersion and kind of a JSON object from its
// top-level keys, skipping every value in between without decoding it. It
// reports ok only when both are strings without escapes under their exact
// keys and no other top-level key could decode as either: encoding/json
// matches keys without regard to case and keeps the last of repeated
// ones, so a key with an escape or a byte outside ASCII, or one equal to
// "apiVersion" or "kind" but for case, makes it give up. It does not
// validate the rest of the input; the typed decode that follows does.
func typeMeta(b []byte) (apiVersion, kind string, ok bool) {
	s := jsonscan.New(b)
	var haveVersion, haveKind bool
	walked := s.Members(func(key []byte, plain bool) bool {
		switch {
		case !plain:
			return false
		case string(key) == "apiVersion" || string(key) == "kind":
			value, ok := s.String()
			if !ok {
				return false
			}
			if string(key) == "kind" {
				kind, haveKind = string(value), true
			} else {
				apiVersion, haveVersion = string(value), true
			}
			return true
		case jsonscan.EqualFoldASCII(key, "apiVersion") || jsonscan.EqualFoldASCII(key, "kind"):
			return false
		}
		return s.Skip()
	})
	return apiVersion, kind, walked && haveVersion && haveKind
}
