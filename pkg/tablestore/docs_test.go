package tablestore_test

import (
	"os"
	"strings"
	"testing"
)

// docsPath is the design document whose measured tables the budget tests
// keep true.
const docsPath = "../../docs/dynamodb.md"

// updateDocsEnv set to 1 makes the budget tests rewrite their tables in
// docs/dynamodb.md from the measurement instead of failing on a difference
// (make docs-dynamodb). Review the diff before committing it.
const updateDocsEnv = "LATCHKEY_UPDATE_DOCS"

// checkDocTable compares a table, as just measured, with the block of
// docs/dynamodb.md between "<!-- measured:name -->" and
// "<!-- /measured:name -->", so that the figures in the document are the
// figures DynamoDB Local gives, not a copy that can drift.
func checkDocTable(t *testing.T, name, table string) {
	t.Helper()
	begin, end := "<!-- measured:"+name+" -->\n", "<!-- /measured:"+name+" -->"
	b, err := os.ReadFile(docsPath)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	i, j := strings.Index(doc, begin), strings.Index(doc, end)
	if i < 0 || j < i {
		t.Fatalf("docs/dynamodb.md has no block %q ... %q for the measured table", begin, end)
	}
	documented := doc[i+len(begin) : j]
	if documented == table {
		return
	}
	if os.Getenv(updateDocsEnv) == "1" {
		if err := os.WriteFile(docsPath, []byte(doc[:i+len(begin)]+table+doc[j:]), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("docs/dynamodb.md: rewrote the %s table from the measurement", name)
		return
	}
	t.Errorf("docs/dynamodb.md (%s) differs from what DynamoDB Local measured. If the change is intended, "+
		"run `make docs-dynamodb` to rewrite the table, and review the diff.\n--- documented\n%s--- measured\n%s", name, documented, table)
}
