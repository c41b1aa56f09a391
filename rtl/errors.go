package rtl

import "errors"

// Error categories. Callers test them with errors.Is; messages carry detail.
var (
	// ErrConfig: a Config or generator option is invalid.
	ErrConfig = errors.New("rtl: invalid configuration")
	// ErrToolchain: a required tool (iverilog, vvp, verilator, yosys, prlimit) is missing or unusable.
	ErrToolchain = errors.New("rtl: toolchain unavailable")
	// ErrParse: Yosys could not parse or elaborate a design.
	ErrParse = errors.New("rtl: design does not parse")
	// ErrInput: an item or candidate is malformed (missing field, unknown contract).
	ErrInput = errors.New("rtl: invalid input")
)
