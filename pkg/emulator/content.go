package emulator

import (
	"html"
	"net/url"
	"strconv"
	"strings"
)

// Canned content: every page is a pure function of the job's input and the
// page number, so the same job always returns the same bytes. URLs of the
// form https://sandbox.oxylabs.io/products/N get a product page of the
// practice shop (title, developer, platform, genre, price, availability);
// other URLs get a generic page and search sources a result list.

// pngBase64 is a 1x1 PNG, so that an image library opens png content.
const pngBase64 = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAAEElEQVR4nGLSztkACAAA//8CFQFKKlIPOgAAAABJRU5ErkJggg=="

// page is what a canned page shows.
type page struct {
	url       string
	number    int
	title     string
	product   bool
	developer string
	platform  string
	genre     string
	price     string // "91,99"
	inStock   bool
	results   []string // search results, for search sources
}

func pick(list []string, h uint64) string { return list[h%uint64(len(list))] }

// cannedPage describes page n of j.
func cannedPage(j *job, n int) page {
	u := targetURL(j, n)
	h := hashString(hashString(0, j.spec.src.name), j.input)
	h = mix64(h ^ uint64(n))
	p := page{url: u, number: n}
	if id, ok := sandboxProduct(j.input); ok {
		adjectives := []string{"The Legend of", "Super", "Chronicles of", "Return to", "Tales of", "Shadows of", "Echoes of", "Rise of"}
		nouns := []string{"Zelda: Ocarina of Time", "Mario Galaxy", "the Ancient Forge", "Hollow Peaks", "Starfall", "the Iron Crown", "Crystal Depths", "Emberfall"}
		g := mix64(uint64(id))
		p.product = true
		p.title = pick(adjectives, g) + " " + pick(nouns, g>>8)
		p.developer = pick([]string{"Nintendo", "Rockstar Games", "Bethesda", "Valve", "Ubisoft", "Capcom", "Square Enix", "FromSoftware"}, g>>16)
		p.platform = pick([]string{"nintendo-64", "xbox-platform", "playstation-5", "pc", "switch", "wii"}, g>>24)
		p.genre = pick([]string{"Action Adventure", "Fantasy", "Shooter", "Puzzle", "Role-Playing", "Strategy", "Racing"}, g>>32)
		p.price = strconv.Itoa(int(10+(g>>40)%90)) + ",99"
		p.inStock = (g>>48)%4 != 0
		return p
	}
	if j.spec.inputKey == "url" {
		p.title = "Page " + strconv.Itoa(n) + " of " + hostOf(j.input)
		return p
	}
	p.title = j.input + " - results page " + strconv.Itoa(n)
	p.results = make([]string, 5)
	for i := range p.results {
		p.results[i] = j.input + " " + pick([]string{"review", "price", "guide", "deals", "comparison", "news", "specs"}, h>>(8*uint(i)))
	}
	return p
}

// sandboxProduct reports whether u is a product page of the practice site.
func sandboxProduct(u string) (int, bool) {
	const prefix = "://sandbox.oxylabs.io/products/"
	i := strings.Index(u, prefix)
	if i < 0 {
		return 0, false
	}
	rest := u[i+len(prefix):]
	if k := strings.IndexAny(rest, "/?#"); k >= 0 {
		rest = rest[:k]
	}
	n, err := strconv.Atoi(rest)
	return n, err == nil && n > 0
}

// targetURL is the page's URL as a results entry reports it.
func targetURL(j *job, n int) string {
	in := j.input
	switch {
	case j.spec.inputKey == "url":
		return in
	case strings.HasPrefix(j.spec.src.name, "google"):
		return "https://www.google.com/search?q=" + url.QueryEscape(in) + "&start=" + strconv.Itoa((n-1)*10)
	case strings.HasPrefix(j.spec.src.name, "bing"):
		return "https://www.bing.com/search?q=" + url.QueryEscape(in) + "&first=" + strconv.Itoa((n-1)*10+1)
	case j.spec.src.name == "amazon_product" || j.spec.src.name == "amazon_pricing":
		return "https://www.amazon.com/dp/" + url.PathEscape(in)
	case strings.HasPrefix(j.spec.src.name, "amazon"):
		return "https://www.amazon.com/s?k=" + url.QueryEscape(in) + "&page=" + strconv.Itoa(n)
	}
	site := j.spec.src.name
	if k := strings.IndexByte(site, '_'); k >= 0 {
		site = site[:k]
	}
	return "https://www." + site + ".com/search?q=" + url.QueryEscape(in) + "&page=" + strconv.Itoa(n)
}

// bodyMarker is where padding goes in a canned HTML page.
const bodyMarker = "</main>"

// appendHTML appends p as an HTML page.
func appendHTML(dst []byte, p page) []byte {
	esc := html.EscapeString
	dst = append(dst, `<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>`...)
	dst = append(dst, esc(p.title)...)
	dst = append(dst, `</title><link rel="canonical" href="`...)
	dst = append(dst, esc(p.url)...)
	dst = append(dst, `"></head><body><main>`...)
	dst = append(dst, "<h2 class=\"title\">"...)
	dst = append(dst, esc(p.title)...)
	dst = append(dst, "</h2>"...)
	switch {
	case p.product:
		dst = append(dst, `<div class="brand-wrapper"><span class="developer">Developer: `...)
		dst = append(dst, p.developer...)
		dst = append(dst, `</span><span class="platform">`...)
		dst = append(dst, p.platform...)
		dst = append(dst, `</span><span class="genre">`...)
		dst = append(dst, p.genre...)
		dst = append(dst, `</span></div><div class="price">`...)
		dst = append(dst, p.price...)
		dst = append(dst, ` €</div><p class="availability">`...)
		if p.inStock {
			dst = append(dst, "In stock"...)
		} else {
			dst = append(dst, "Out of stock"...)
		}
		dst = append(dst, `</p><p class="description">A canned product page of the oxypipe sandbox.</p>`...)
	case len(p.results) > 0:
		dst = append(dst, `<ol class="results">`...)
		for i, r := range p.results {
			dst = append(dst, `<li class="result" data-pos="`...)
			dst = strconv.AppendInt(dst, int64(i+1), 10)
			dst = append(dst, `">`...)
			dst = append(dst, esc(r)...)
			dst = append(dst, "</li>"...)
		}
		dst = append(dst, "</ol>"...)
	default:
		dst = append(dst, `<p>A canned page of the oxypipe sandbox, page `...)
		dst = strconv.AppendInt(dst, int64(p.number), 10)
		dst = append(dst, ".</p>"...)
	}
	dst = append(dst, bodyMarker...)
	return append(dst, "</body></html>"...)
}

// appendParsed appends p as a parsed-content object.
func appendParsed(dst []byte, p page, parseStatus int) []byte {
	dst = append(dst, `{"url":`...)
	dst = appendString(dst, p.url)
	dst = append(dst, `,"page":`...)
	dst = strconv.AppendInt(dst, int64(p.number), 10)
	dst = append(dst, `,"title":`...)
	dst = appendString(dst, p.title)
	switch {
	case p.product:
		dst = append(dst, `,"developer":`...)
		dst = appendString(dst, p.developer)
		dst = append(dst, `,"platform":`...)
		dst = appendString(dst, p.platform)
		dst = append(dst, `,"genre":`...)
		dst = appendString(dst, p.genre)
		dst = append(dst, `,"price":`...)
		dst = append(dst, strings.Replace(p.price, ",", ".", 1)...)
		dst = append(dst, `,"currency":"EUR","availability":`...)
		dst = strconv.AppendBool(dst, p.inStock)
	case len(p.results) > 0:
		dst = append(dst, `,"results":{"organic":[`...)
		for i, r := range p.results {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = append(dst, `{"pos":`...)
			dst = strconv.AppendInt(dst, int64(i+1), 10)
			dst = append(dst, `,"title":`...)
			dst = appendString(dst, r)
			dst = append(dst, '}')
		}
		dst = append(dst, "]}"...)
	}
	dst = append(dst, `,"parse_status_code":`...)
	dst = strconv.AppendInt(dst, int64(parseStatus), 10)
	return append(dst, '}')
}

// appendMarkdown appends p as Markdown.
func appendMarkdown(dst []byte, p page) []byte {
	dst = append(dst, "# "...)
	dst = append(dst, p.title...)
	dst = append(dst, "\n\n"...)
	switch {
	case p.product:
		dst = append(dst, "Developer: "...)
		dst = append(dst, p.developer...)
		dst = append(dst, "\n\nPrice: "...)
		dst = append(dst, p.price...)
		dst = append(dst, " €\n"...)
	case len(p.results) > 0:
		for i, r := range p.results {
			dst = strconv.AppendInt(dst, int64(i+1), 10)
			dst = append(dst, ". "...)
			dst = append(dst, r...)
			dst = append(dst, '\n')
		}
	default:
		dst = append(dst, "Page "...)
		dst = strconv.AppendInt(dst, int64(p.number), 10)
		dst = append(dst, ".\n"...)
	}
	return dst
}
