package cli

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestCheckHTMLConsistent: check -o html embeds each sequence graph once
// (a capture whose 57 findings share two RPCs made a 4.4 MB page with the
// same PNG in every finding), and its headline counts what fails the
// check as -o json does: MUST violations, the SHOULD ones as warnings
// (failures only with --strict).
func TestCheckHTMLConsistent(t *testing.T) {
	capture := filepath.Join(faultsDir, "BR-01-ipv4-tos-shift3.pcapng")
	out, _, _ := run(t, "check", "-o", "json", capture)
	var js struct {
		Files []struct {
			Must   int `json:"must_violations"`
			Should int `json:"should_violations"`
		} `json:"files"`
	}
	if err := json.Unmarshal([]byte(out), &js); err != nil || len(js.Files) != 1 || js.Files[0].Must == 0 || js.Files[0].Should == 0 {
		t.Fatalf("check -o json: %v, %+v; want MUST and SHOULD violations", err, js.Files)
	}
	must, should := js.Files[0].Must, js.Files[0].Should
	for _, c := range []struct {
		strict bool
		want   string
	}{
		{false, fmt.Sprintf("FAIL: %d MUST violations; %d SHOULD warnings", must, should)},
		{true, fmt.Sprintf("FAIL: %d MUST and %d SHOULD violations (--strict)", must, should)},
	} {
		args := []string{"check", "-o", "html", capture}
		if c.strict {
			args = append(args, "--strict")
		}
		page, _, code := run(t, args...)
		if code != ExitViolations || !strings.Contains(page, `id="verdict" class="fail">`+c.want+"<") {
			t.Errorf("%v: exit %d, verdict %q; want %q", args, code, regexp.MustCompile(`id="verdict"[^<]*`).FindString(page), c.want)
		}
		imgs := regexp.MustCompile(`src="data:image/png;base64,[^"]*"`).FindAllString(page, -1)
		seen := map[string]bool{}
		for _, img := range imgs {
			if seen[img] {
				t.Errorf("%v: the same image embedded twice (%d images, %d bytes)", args, len(imgs), len(page))
				break
			}
			seen[img] = true
		}
		if len(page) > 1<<20 {
			t.Errorf("%v: a %d-byte page for an 86-packet capture", args, len(page))
		}
	}
}
