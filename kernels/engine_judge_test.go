package kernels

import (
	"testing"

	"github.com/crucible-data/crucible/engine/judgetest"
)

// The kernel verifier (cpu backend) holds to the one judge contract.
func TestKernelVerifierIsAJudge(t *testing.T) {
	v, err := NewVerifier(testConfig(), nil)
	if err != nil {
		t.Fatal(err)
	}
	judgetest.Run(t, v, judgetest.Fixture{
		Item: loadSeed(t, "vector_add_f32"),
		Right: `#include <stdint.h>
void vector_add(const float *a, const float *b, float *out, int64_t n) {
	for (int64_t i = n - 1; i >= 0; i--) out[i] = b[i] + a[i];
}
`,
		Wrong: []string{`#include <stdint.h>
void vector_add(const float *a, const float *b, float *out, int64_t n) {
	for (int64_t i = 0; i < n; i++) out[i] = a[i] - b[i];
}
`, `#include <stdint.h>
void vector_add(const float *a, const float *b, float *out, int64_t n) {
	for (int64_t i = 0; i < n; i++) out[i] = 0;
}
`},
		BrokenReference: "this is not C",
	})
}
