// Package jsonscan is the repository's one JSON cursor: it finds the
// members of JSON objects without decoding them, where fields must be
// read cheaply and without reflection: the events and trimmed objects the
// ledger writes and reads back for every event, the kind of an object
// before its typed decode, the request of an AdmissionReview.
//
// Invariant: a Scanner checks the grammar of everything it moves past as
// encoding/json does (strings, escapes, numbers, literals, nesting up to
// encoding/json's depth limit, DepthMax), so a walk that moves past a
// whole document and then finds AtEnd has found it valid: json.Valid
// would accept it.
//
// # Caveats
//
// A Scanner vouches only for plain strings (printable ASCII without
// escapes), whose bytes are their value; callers fall back to
// encoding/json whenever the scanner cannot vouch for reading what
// encoding/json would. A Scanner reads the slice it was given without
// copying it: the caller must not change it during the walk, and a value
// returned (String, Raw) aliases it. A Scanner is not safe for
// concurrent use.
package jsonscan
