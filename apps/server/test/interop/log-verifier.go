// Command log-verifier checks the server's checkpoints and proofs with Go's golang.org/x/mod/sumdb/note
// and golang.org/x/mod/sumdb/tlog, tools nobody here wrote: the interop test feeds it JSON on stdin
// and it exits non-zero naming the first check that failed.
package main

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

type input struct {
	VerifierKey  string   `json:"verifier_key"`
	Origin       string   `json:"origin"`
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
	roots := map[int64]tlog.Hash{}
	for _, text := range in.Checkpoints {
		n, err := note.Open([]byte(text), note.VerifierList(verifier))
		if err != nil {
			fail("checkpoint %q: %v", text, err)
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
