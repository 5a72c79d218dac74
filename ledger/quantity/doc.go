// Package quantity owns the ledger's numbers: Kubernetes resource quantities
// ("500m", "1.5Gi", "1e3"), parsed, added, compared and printed exactly as
// k8s.io/apimachinery's resource.Quantity does, without ever losing a digit.
//
// The invariant is that every Quantity holds its value exactly and prints it
// by Kubernetes' rules:
//
//   - Parse accepts and rejects the same text as resource.ParseQuantity, with
//     the same errors.
//   - A parsed value keeps nine decimal places at most, rounding any finer
//     digit away from zero (0.1n is 1n).
//   - A BinarySI value is capped at 2^63-1 in magnitude when parsed; decimal
//     values are not capped.
//   - The suffix decides the Format: n u m k M G T P E and no suffix are
//     DecimalSI, Ki Mi Gi Ti Pi Ei are BinarySI, e/E followed by an integer is
//     DecimalExponent, and a parsed BinarySI value strictly between -1 and 1
//     is DecimalSI.
//   - String prints the parsed text itself when Kubernetes keeps it (for
//     example "100k", "1E3", "+1Ki") and otherwise the canonical form.
//   - The canonical form has no fraction digits and the largest suffix that
//     needs none: 1.5 prints as 1500m, 1.5Gi as 1536Mi, 1e4 as 10e3.
//   - A decimal exponent is always a multiple of three.
//   - BinarySI prints only whole values of at least 1024 in magnitude; others
//     print as DecimalSI.
//   - Zero prints as 0 in every format.
//   - Add and Sub return a result in the receiver's Format, or in the
//     argument's Format when the receiver is zero, so a sum prints in the
//     format of its first non-zero term; any arithmetic or printing after
//     them uses the canonical form.
//   - Arithmetic is exact at any size; an inexact result is a bug and
//     panics.
//
// Values that fit an int64 are held as one, in the same int64 form
// Kubernetes uses, so that Add, Cmp and String on ordinary quantities do not
// allocate beyond the printed string.
//
// Exact and ParseExact give a text for storage that keeps the value, the
// Format and the printed form; FromKube converts a resource.Quantity.
//
// # Caveats
//
// Kubernetes prints a few values in ways that lose information, and so does
// this package, on purpose: a DecimalSI value whose exponent is beyond the
// suffixes n to E prints without any suffix (1000E prints as "1"), and so
// does a BinarySI value beyond Ei (2^70 prints as "1"). Do not parse String
// back to recover a value; store Exact instead.
//
// Parse rejects with ErrRange what Kubernetes accepts but this package will
// not hold: text longer than LengthMax, and values whose leading digit lies
// above 10^ExponentMax (Kubernetes accepts 1e2147483647, and hangs adding 1
// to it).
//
// Kubernetes gets a few results wrong by int64 wrap-around, and this package
// computes them exactly instead: x - (-2^63), and exponents that overflow 32
// bits inside the int64 path. Exponents written as e/E followed by
// a number beyond 32 bits are truncated to 32 bits, as Kubernetes does,
// because that decides which values are accepted.
//
// Kubernetes prints a BinarySI value of exactly -2^63 as
// "-9223372036854775808" when it holds it as an int64 and as "-8Ei"
// otherwise, and whether it holds an int64 depends on the value's history;
// Quantity follows it. Exact keeps the printed form, but a value restored by
// ParseExact or FromKube may take the other form after later arithmetic
// brings it back to -2^63.
//
// Quantity is not comparable with ==: equal values may be held in different
// forms and print differently. Use Cmp.
package quantity
