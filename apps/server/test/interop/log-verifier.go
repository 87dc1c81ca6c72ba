// Command log-verifier checks the server's checkpoints and proofs with Go's golang.org/x/mod/sumdb/note
// and golang.org/x/mod/sumdb/tlog, tools nobody here wrote: the interop test feeds it JSON on stdin
// and it exits non-zero naming the first check that failed.
package main

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

type input struct {
	VerifierKey string `json:"verifier_key"`
	Origin      string `json:"origin"`
	// CosignerKeys, when given, are cosignature/v1 (Ed25519) verifier keys: every checkpoint must carry a
	// valid cosignature of each (root checkpoints and their witnesses).
	CosignerKeys []string `json:"cosigner_keys"`
	Checkpoints  []string `json:"checkpoints"`
	Inclusions   []struct {
		Record    string   `json:"record"`
		LeafIndex int64    `json:"leaf_index"`
		TreeSize  int64    `json:"tree_size"`
		Path      []string `json:"path"`
	} `json:"inclusions"`
	Consistencies []struct {
		From int64    `json:"from"`
		To   int64    `json:"to"`
		Path []string `json:"path"`
	} `json:"consistencies"`
}

func main() {
	var in input
	if err := json.NewDecoder(os.Stdin).Decode(&in); err != nil {
		fail("reading input: %v", err)
	}
	verifier, err := note.NewVerifier(in.VerifierKey)
	if err != nil {
		fail("verifier key: %v", err)
	}
	verifiers := []note.Verifier{verifier}
	for _, key := range in.CosignerKeys {
		v, err := newCosignatureVerifier(key)
		if err != nil {
			fail("cosigner key %q: %v", key, err)
		}
		verifiers = append(verifiers, v)
	}
	roots := map[int64]tlog.Hash{}
	for _, text := range in.Checkpoints {
		n, err := note.Open([]byte(text), note.VerifierList(verifiers...))
		if err != nil {
			fail("checkpoint %q: %v", text, err)
		}
		signed := map[string]bool{}
		for _, sig := range n.Sigs {
			signed[sig.Name] = true
		}
		for _, v := range verifiers {
			if !signed[v.Name()] {
				fail("checkpoint %q: no valid signature by %s", text, v.Name())
			}
		}
		lines := strings.Split(n.Text, "\n")
		if len(lines) < 4 {
			fail("checkpoint body %q is not origin, size, hash", n.Text)
		}
		// One key signs every tenant's log: the signature says who signed, the origin whose log it is.
		if lines[0] != in.Origin {
			fail("checkpoint is for log %q, not %q", lines[0], in.Origin)
		}
		size, err := strconv.ParseInt(lines[1], 10, 64)
		if err != nil {
			fail("checkpoint size %q: %v", lines[1], err)
		}
		root, err := tlog.ParseHash(lines[2])
		if err != nil {
			fail("checkpoint root %q: %v", lines[2], err)
		}
		roots[size] = root
	}
	for _, inc := range in.Inclusions {
		record, err := base64.StdEncoding.DecodeString(inc.Record)
		if err != nil {
			fail("record %d: %v", inc.LeafIndex, err)
		}
		root, ok := roots[inc.TreeSize]
		if !ok {
			fail("no checkpoint of size %d", inc.TreeSize)
		}
		if err := tlog.CheckRecord(hashes(inc.Path), inc.TreeSize, root, inc.LeafIndex, tlog.RecordHash(record)); err != nil {
			fail("inclusion of leaf %d in %d: %v", inc.LeafIndex, inc.TreeSize, err)
		}
	}
	for _, c := range in.Consistencies {
		if err := tlog.CheckTree(hashes(c.Path), c.To, roots[c.To], c.From, roots[c.From]); err != nil {
			fail("consistency %d -> %d: %v", c.From, c.To, err)
		}
	}
	fmt.Printf("ok: %d checkpoints, %d inclusion proofs, %d consistency proofs\n", len(in.Checkpoints), len(in.Inclusions), len(in.Consistencies))
}

// cosignatureVerifier verifies C2SP tlog-cosignature cosignature/v1 (Ed25519) lines: transparency-dev/formats'
// NewVerifierForCosignatureV1, ported to the standard library (as packages/tlog/scripts/vectors.go).
type cosignatureVerifier struct {
	name string
	hash uint32
	key  ed25519.PublicKey
}

func newCosignatureVerifier(vkey string) (*cosignatureVerifier, error) {
	parts := strings.SplitN(vkey, "+", 3)
	if len(parts) != 3 {
		return nil, fmt.Errorf("malformed verifier id")
	}
	key, err := base64.StdEncoding.DecodeString(parts[2])
	if err != nil || len(key) != 33 || key[0] != 4 {
		return nil, fmt.Errorf("not a cosignature/v1 Ed25519 key")
	}
	h := sha256.New()
	h.Write([]byte(parts[0] + "\n"))
	h.Write(key)
	return &cosignatureVerifier{parts[0], binary.BigEndian.Uint32(h.Sum(nil)), ed25519.PublicKey(key[1:])}, nil
}

func (v *cosignatureVerifier) Name() string    { return v.name }
func (v *cosignatureVerifier) KeyHash() uint32 { return v.hash }
func (v *cosignatureVerifier) Verify(msg, sig []byte) bool {
	if len(sig) != 8+ed25519.SignatureSize || len(bytes.Split(msg, []byte("\n"))) < 3 {
		return false
	}
	m := []byte(fmt.Sprintf("cosignature/v1\ntime %d\n%s", binary.BigEndian.Uint64(sig), msg))
	return ed25519.Verify(v.key, m, sig[8:])
}

func hashes(encoded []string) []tlog.Hash {
	out := make([]tlog.Hash, len(encoded))
	for i, text := range encoded {
		h, err := tlog.ParseHash(text)
		if err != nil {
			fail("hash %q: %v", text, err)
		}
		out[i] = h
	}
	return out
}

func fail(format string, args ...interface{}) {
	fmt.Fprintf(os.Stderr, format+"\n", args...)
	os.Exit(1)
}
