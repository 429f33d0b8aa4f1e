package repeatguard

import (
	"bytes"
	"encoding/json"
	"fmt"
	"hash/maphash"
	"math"
	"math/big"
	"reflect"
	"strconv"
	"strings"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

const (
	tagNil uint64 = 0x9e3779b97f4a7c15 + iota
	tagFalse
	tagTrue
	tagString
	tagNumber
	tagBigInt
	tagInt
	tagNegInt
	tagList
	tagMap
	tagOther
)

// CallHash hashes a call in its loop scope; toolHash is ToolHash(tool).
func CallHash(scope string, toolHash uint64, args map[string]any) uint64 {
	h := maphash.String(hashSeed, scope) ^ toolHash
	if len(args) == 0 {
		return mix(h ^ tagMap)
	}
	return mix(h ^ hashValue(hashSeed, args, 0))
}

// ToolHash is the hash of a tool's name in CallHash.
func ToolHash(name string) uint64 { return rotl(mix(maphash.String(hashSeed, name) ^ tagString)) }

// ArgsHash returns the canonical hash of a call's arguments that the
// repeated-call guard uses (the process's seed): equal for arguments that
// differ only in key order or number form. For tests and tools.
func ArgsHash(args map[string]any) uint64 {
	return hashValue(hashSeed, args, 0)
}

// hashSeed is the process's seed of every hash here: random, so that
// nobody outside can choose arguments that collide.
var hashSeed = maphash.MakeSeed()

// maxHashDepth bounds recursion; deeper values hash by their JSON text.
const maxHashDepth = 64

func hashValue(seed maphash.Seed, v any, depth int) uint64 {
	switch x := v.(type) {
	case nil:
		return tagNil
	case bool:
		if x {
			return tagTrue
		}
		return tagFalse
	case string:
		return mix(tagString ^ hashString(seed, x))
	case float64:
		return hashFloat(x)
	case float32:
		return hashFloat(float64(x))
	case int:
		return hashInt(int64(x))
	case int64:
		return hashInt(x)
	case int32:
		return hashInt(int64(x))
	case int16:
		return hashInt(int64(x))
	case int8:
		return hashInt(int64(x))
	case uint:
		return hashUint(uint64(x))
	case uint64:
		return hashUint(x)
	case uint32:
		return hashUint(uint64(x))
	case uint16:
		return hashUint(uint64(x))
	case uint8:
		return hashUint(uint64(x))
	case json.Number:
		return hashNumber(seed, string(x))
	}
	if depth >= maxHashDepth {
		return hashOther(seed, v, depth)
	}
	switch x := v.(type) {
	case map[string]any:
		var sum uint64
		for k, e := range x {
			sum += mix(hashString(seed, k) ^ rotl(hashValue(seed, e, depth+1)))
		}
		return mix(tagMap ^ sum ^ uint64(len(x)))
	case []any:
		h := tagList ^ uint64(len(x))
		for _, e := range x {
			h = mix(h ^ hashValue(seed, e, depth+1))
		}
		return mix(h)
	}
	return hashOther(seed, v, depth)
}

// hashOther hashes any other value (typed maps, slices, structs) as its
// JSON encoding decoded again (numbers as json.Number, so that integers
// stay exact), so that it hashes like the same arguments written as JSON;
// past maxHashDepth, by the JSON text itself (encoding/json sorts map keys
// and writes numbers in one form).
func hashOther(seed maphash.Seed, v any, depth int) uint64 {
	if rv := reflect.ValueOf(v); rv.Kind() == reflect.Pointer && rv.IsNil() {
		return tagNil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return mix(tagOther ^ maphash.String(seed, fmt.Sprintf("%T %v", v, v)))
	}
	if depth < maxHashDepth {
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.UseNumber()
		var back any
		if dec.Decode(&back) == nil {
			return hashValue(seed, back, depth+1)
		}
	}
	return mix(tagOther ^ maphash.Bytes(seed, b))
}

// hashFloat hashes a float64: an integral one as the integer it is (when
// one of int64 or uint64 holds it), any other by its bits.
func hashFloat(f float64) uint64 {
	switch {
	case f != f:
		return mix(tagNumber ^ 0x7ff8000000000001) // every NaN
	case f == math.Trunc(f) && f >= -(1<<63) && f < 1<<63:
		return hashInt(int64(f)) // exact: f is integral and in range (-0 is 0)
	case f == math.Trunc(f) && f >= 0 && f < 1<<64:
		return hashUint(uint64(f))
	}
	return mix(tagNumber ^ math.Float64bits(f))
}

// hashInt and hashUint hash an integer exactly: equal values of any
// integer type hash alike, different values differently.
func hashInt(i int64) uint64 {
	if i >= 0 {
		return hashUint(uint64(i))
	}
	return mix(tagNegInt ^ uint64(i))
}

func hashUint(u uint64) uint64 { return mix(tagInt ^ u) }

// hashNumber hashes a JSON number's text by its value: an integer written
// without fraction or exponent exactly (in 64 bits, or as its canonical
// decimal beyond them, unless a float64 holds it exactly), any other number
// as the float64 encoding/json decodes it to (so 3e0 is 3, and 0.1 is the
// float64 0.1), and text that is no number as text.
func hashNumber(seed maphash.Seed, s string) uint64 {
	if i, err := strconv.ParseInt(s, 10, 64); err == nil {
		return hashInt(i)
	}
	if u, err := strconv.ParseUint(s, 10, 64); err == nil {
		return hashUint(u)
	}
	if integerText(s) {
		var z big.Int
		if _, ok := z.SetString(s, 10); ok {
			if f, acc := new(big.Float).SetInt(&z).Float64(); acc == big.Exact {
				return hashFloat(f)
			}
			return mix(tagBigInt ^ maphash.String(seed, z.String()))
		}
	}
	if f, err := strconv.ParseFloat(s, 64); err == nil {
		return hashFloat(f)
	}
	return mix(tagOther ^ maphash.String(seed, s))
}

// integerText reports whether s is an optional minus sign and digits.
func integerText(s string) bool {
	s = strings.TrimPrefix(s, "-")
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// hashString hashes a string in its canonical Unicode form (canonString);
// ASCII, the common case, is its own form and is hashed as it is.
func hashString(seed maphash.Seed, s string) uint64 {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return maphash.String(seed, canonString(s))
		}
	}
	return maphash.String(seed, s)
}

// canonString returns s without default-ignorable code points, in NFC.
// Invalid UTF-8 is kept byte for byte (it cannot be normalised).
func canonString(s string) string {
	if !utf8.ValidString(s) {
		return s
	}
	if strings.IndexFunc(s, defaultIgnorable) >= 0 {
		s = strings.Map(func(r rune) rune {
			if defaultIgnorable(r) {
				return -1
			}
			return r
		}, s)
	}
	return norm.NFC.String(s)
}

// defaultIgnorable reports whether r is a Default_Ignorable_Code_Point
// (Unicode's DerivedCoreProperties): invisible when not supported, such as
// the soft hyphen, zero-width space and joiners, word joiner, bidi
// controls, variation selectors, the BOM and the tag characters.
func defaultIgnorable(r rune) bool {
	switch {
	case r < 0xAD:
		return false
	case r == 0xAD, r == 0x34F, r == 0x61C, r == 0x115F, r == 0x1160, r == 0x17B4, r == 0x17B5,
		r >= 0x180B && r <= 0x180F, r >= 0x200B && r <= 0x200F, r >= 0x202A && r <= 0x202E,
		r >= 0x2060 && r <= 0x206F, r == 0x3164, r >= 0xFE00 && r <= 0xFE0F, r == 0xFEFF,
		r == 0xFFA0, r >= 0xFFF0 && r <= 0xFFF8, r >= 0x1BCA0 && r <= 0x1BCA3,
		r >= 0x1D173 && r <= 0x1D17A, r >= 0xE0000 && r <= 0xE0FFF:
		return true
	}
	return false
}

// mix is splitmix64's finaliser.
func mix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	return x ^ x>>31
}

func rotl(x uint64) uint64 { return x<<29 | x>>35 }
