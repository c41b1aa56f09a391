package selection

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
)

// Extraction modes.
const (
	ExtractAuto      = "auto"       // <answer> tags when present, else fenced code blocks
	ExtractFenced    = "fenced"     // fenced code blocks only
	ExtractAnswerTag = "answer_tag" // <answer>...</answer> only
	ExtractRegexp    = "regexp"     // the configured pattern only
)

// Which block wins when a response holds several.
const (
	PickLast  = "last"
	PickFirst = "first"
)

// ErrNoAnswer says a response held no extractable answer. It is a finding
// about the response (recorded as fail at stage extract), not a run error.
var ErrNoAnswer = errors.New("no answer found in response")

// ExtractConfig says how to pull the answer (code) out of a response.
type ExtractConfig struct {
	Mode string `yaml:"mode" json:"mode"`
	Pick string `yaml:"pick" json:"pick"`
	// Languages restricts fenced blocks to these info-string languages
	// (case-insensitive); blocks without a language are always accepted.
	// Empty accepts every block.
	Languages []string `yaml:"languages" json:"languages"`
	// Pattern is the regexp of mode regexp. Its group named "answer", else
	// its first group, else the whole match is the answer. (?s) is implied.
	Pattern string `yaml:"pattern" json:"pattern"`
}

// DefaultExtractConfig extracts from <answer> tags or fenced blocks, last wins.
func DefaultExtractConfig() ExtractConfig {
	return ExtractConfig{Mode: ExtractAuto, Pick: PickLast}
}

// Validate reports every bad field.
func (c ExtractConfig) Validate() error {
	var errs []error
	switch c.Mode {
	case ExtractAuto, ExtractFenced, ExtractAnswerTag:
	case ExtractRegexp:
		if c.Pattern == "" {
			errs = append(errs, fmt.Errorf("extract.pattern: required with mode regexp"))
		} else if _, err := regexp.Compile(c.Pattern); err != nil {
			errs = append(errs, fmt.Errorf("extract.pattern: %v", err))
		}
	default:
		errs = append(errs, fmt.Errorf("extract.mode: %q is not auto|fenced|answer_tag|regexp", c.Mode))
	}
	if c.Pick != PickLast && c.Pick != PickFirst {
		errs = append(errs, fmt.Errorf("extract.pick: %q is not last|first", c.Pick))
	}
	return errors.Join(errs...)
}

// Extractor pulls answers out of responses. It is safe for concurrent use.
type Extractor struct {
	cfg   ExtractConfig
	re    *regexp.Regexp
	langs map[string]bool
}

// NewExtractor validates cfg and compiles its pattern.
func NewExtractor(cfg ExtractConfig) (*Extractor, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	x := &Extractor{cfg: cfg}
	if cfg.Mode == ExtractRegexp {
		x.re = regexp.MustCompile("(?s)" + cfg.Pattern)
	}
	if len(cfg.Languages) > 0 {
		x.langs = map[string]bool{}
		for _, l := range cfg.Languages {
			x.langs[strings.ToLower(strings.TrimSpace(l))] = true
		}
	}
	return x, nil
}

// Extract returns the winning answer of response, or ErrNoAnswer wrapped
// with the reason.
func (x *Extractor) Extract(response string) (string, error) {
	var blocks []string
	switch x.cfg.Mode {
	case ExtractFenced:
		blocks = x.fenced(response)
	case ExtractAnswerTag:
		blocks = answerTags(response)
	case ExtractRegexp:
		blocks = x.regexpMatches(response)
	default:
		if blocks = answerTags(response); len(blocks) == 0 {
			blocks = x.fenced(response)
		}
	}
	var kept []string
	for _, b := range blocks {
		if strings.TrimSpace(b) != "" {
			kept = append(kept, b)
		}
	}
	if len(kept) == 0 {
		return "", fmt.Errorf("%w (mode %s)", ErrNoAnswer, x.cfg.Mode)
	}
	if x.cfg.Pick == PickFirst {
		return kept[0], nil
	}
	return kept[len(kept)-1], nil
}

var answerTagRE = regexp.MustCompile(`(?is)<answer>(.*?)</answer>`)

// answerTags returns the contents of <answer> tags. A tag whose content is a
// single fenced block yields the block's body, since models often fence code
// inside the tag.
func answerTags(s string) []string {
	var out []string
	for _, m := range answerTagRE.FindAllStringSubmatch(s, -1) {
		body := m[1]
		if inner := fencedBlocks(body, nil); len(inner) == 1 {
			body = inner[0].body
		}
		out = append(out, strings.Trim(body, "\n"))
	}
	return out
}

func (x *Extractor) fenced(s string) []string {
	var out []string
	for _, b := range fencedBlocks(s, x.langs) {
		out = append(out, b.body)
	}
	return out
}

func (x *Extractor) regexpMatches(s string) []string {
	group := 0
	if i := x.re.SubexpIndex("answer"); i > 0 {
		group = i
	} else if x.re.NumSubexp() > 0 {
		group = 1
	}
	var out []string
	for _, m := range x.re.FindAllStringSubmatch(s, -1) {
		out = append(out, m[group])
	}
	return out
}

type fencedBlock struct {
	lang, body string
}

// fencedBlocks parses CommonMark-style fences: a line of at least three
// backticks or tildes indented at most three spaces opens a block, a line of
// at least as many of the same character closes it. An unclosed block is
// dropped: a response cut off mid-block is not an answer.
func fencedBlocks(s string, langs map[string]bool) []fencedBlock {
	var out []fencedBlock
	lines := strings.Split(s, "\n")
	for i := 0; i < len(lines); i++ {
		ch, n, info, ok := fenceOpen(lines[i])
		if !ok {
			continue
		}
		end := -1
		for j := i + 1; j < len(lines); j++ {
			if fenceClose(lines[j], ch, n) {
				end = j
				break
			}
		}
		if end < 0 {
			break
		}
		lang := strings.ToLower(strings.Fields(info + " x")[0])
		if info == "" {
			lang = ""
		}
		if langs == nil || lang == "" || langs[lang] {
			out = append(out, fencedBlock{lang: lang, body: strings.Join(lines[i+1:end], "\n")})
		}
		i = end
	}
	return out
}

func fenceOpen(line string) (ch byte, n int, info string, ok bool) {
	t := strings.TrimRight(line, "\r")
	indent := len(t) - len(strings.TrimLeft(t, " "))
	if indent > 3 {
		return 0, 0, "", false
	}
	t = t[indent:]
	if len(t) < 3 || (t[0] != '`' && t[0] != '~') {
		return 0, 0, "", false
	}
	ch = t[0]
	for n < len(t) && t[n] == ch {
		n++
	}
	if n < 3 {
		return 0, 0, "", false
	}
	info = strings.TrimSpace(t[n:])
	if ch == '`' && strings.Contains(info, "`") {
		return 0, 0, "", false
	}
	return ch, n, info, true
}

func fenceClose(line string, ch byte, n int) bool {
	t := strings.TrimSpace(strings.TrimRight(line, "\r"))
	if len(t) < n {
		return false
	}
	for i := 0; i < len(t); i++ {
		if t[i] != ch {
			return false
		}
	}
	return true
}
