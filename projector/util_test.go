package projector

import (
	"encoding/binary"
	"errors"
	"sort"
)

var errBadBytes = errors.New("bad bytes")

func sortStrings(s []string) { sort.Strings(s) }

func seqFromBytes(b []byte) uint64 { return binary.BigEndian.Uint64(b) }
