package conformance

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"io"
	"os"
	"strings"

	"github.com/onsi/ginkgo/v2/reporters"
	"github.com/onsi/ginkgo/v2/types"
)

// writeJUnit writes report as JUnit XML to path: one testcase per spec
// (suite setup nodes left out), each with its rule IDs, slack and capture
// as properties. Ginkgo writes a property's value as the JSON encoding of
// the report entry ("\"HOMA-GRANT-001\""); string values are unquoted here
// so CI tools show the text. Errors: path cannot be written.
func writeJUnit(report types.Report, path string) error {
	cfg := reporters.JunitReportConfig{OmitTimelinesForSpecState: types.SpecStatePassed, OmitSuiteSetupNodes: true}
	if err := reporters.GenerateJUnitReportWithConfig(report, path, cfg); err != nil {
		return err
	}
	suites, err := readJUnitFile(path)
	if err != nil {
		return err
	}
	for i := range suites.TestSuites {
		for j := range suites.TestSuites[i].TestCases {
			props := suites.TestSuites[i].TestCases[j].Properties
			if props == nil {
				continue
			}
			for k, p := range props.Properties {
				var s string
				if json.Unmarshal([]byte(p.Value), &s) == nil {
					props.Properties[k].Value = s
				}
			}
		}
	}
	return writeJUnitFile(path, suites)
}

// DemoteShouldFailures rewrites the JUnit report at path so that a failed
// spec labelled SHOULD is a warning, not a failure: its <failure> moves to
// <system-err> prefixed "WARNING (SHOULD): " and the counts drop, as
// homatest run treats it without --strict. Errors: path cannot be read,
// parsed or written.
func DemoteShouldFailures(path string) error {
	suites, err := readJUnitFile(path)
	if err != nil {
		return err
	}
	for i := range suites.TestSuites {
		ts := &suites.TestSuites[i]
		for j := range ts.TestCases {
			tc := &ts.TestCases[j]
			if tc.Failure == nil || !strings.Contains(tc.Name, "SHOULD") {
				continue
			}
			tc.SystemErr = "WARNING (SHOULD): " + tc.Failure.Message + "\n" + tc.Failure.Description + "\n" + tc.SystemErr
			tc.Failure = nil
			ts.Failures--
			suites.Failures--
		}
	}
	return writeJUnitFile(path, suites)
}

// The JUnit report's elements: Ginkgo's, which CI tools read. Every JUnit
// report of homatest (the suite's passes, homatest check) is built from
// them and written by WriteJUnit.
type (
	// JUnitSuites is the <testsuites> element.
	JUnitSuites = reporters.JUnitTestSuites
	// JUnitSuite is one <testsuite>.
	JUnitSuite = reporters.JUnitTestSuite
	// JUnitCase is one <testcase>.
	JUnitCase = reporters.JUnitTestCase
	// JUnitFailure is a test case's <failure>.
	JUnitFailure = reporters.JUnitFailure
	// JUnitSkipped is a test case's <skipped>.
	JUnitSkipped = reporters.JUnitSkipped
)

// WriteJUnit writes suites to w as JUnit XML (the XML header, indented
// elements), the top element's counts summed from the suites'. Errors:
// w's.
func WriteJUnit(w io.Writer, suites JUnitSuites) error {
	suites.Tests, suites.Failures, suites.Errors, suites.Disabled = 0, 0, 0, 0
	for _, s := range suites.TestSuites {
		suites.Tests += s.Tests
		suites.Failures += s.Failures
		suites.Errors += s.Errors
		suites.Disabled += s.Disabled
	}
	out, err := xml.MarshalIndent(suites, "", "  ")
	if err != nil {
		return err
	}
	_, err = w.Write(append([]byte(xml.Header), append(out, '\n')...))
	return err
}

// readJUnitFile reads the JUnit report at path. Errors: path cannot be
// read or parsed.
func readJUnitFile(path string) (JUnitSuites, error) {
	var suites JUnitSuites
	b, err := os.ReadFile(path)
	if err != nil {
		return suites, err
	}
	return suites, xml.Unmarshal(b, &suites)
}

// writeJUnitFile writes suites to path atomically (a temporary file renamed
// over it).
func writeJUnitFile(path string, suites JUnitSuites) error {
	var b bytes.Buffer
	if err := WriteJUnit(&b, suites); err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b.Bytes(), 0o644); err != nil {
		os.Remove(tmp)
		return err
	}
	return os.Rename(tmp, path)
}
