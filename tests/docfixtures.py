"""Small documents of every format the converters handle, made here so the tests ship no binaries.

Each maker takes the text to put in the document and returns its bytes:
PDF and PostScript are written by hand, the Office Open XML formats as zip
files of hand-written XML, Word 97 .doc and PowerPoint .ppt as hand-built
OLE2 compound files (just the parts antiword, catdoc and catppt read), RTF
and TeX as text, .xls through xlwt, images through Pillow. ``python tests/docfixtures.py DIR`` writes one of each.
"""

from __future__ import annotations

import io
import struct
import sys
import zipfile
from pathlib import Path
from xml.sax.saxutils import escape

MIME_TYPES = {
    "pdf": "application/pdf",
    "ps": "application/postscript",
    "docx": "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
    "xlsx": "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
    "pptx": "application/vnd.openxmlformats-officedocument.presentationml.presentation",
    "xls": "application/vnd.ms-excel",
    "doc": "application/msword",
    "ppt": "application/vnd.ms-powerpoint",
    "rtf": "application/rtf",
    "tex": "application/x-tex",
    "png": "image/png",
    "gif": "image/gif",
}


def _string_literal(text: str) -> str:
    """A PDF or PostScript string literal of ``text`` in Windows-1252, non-ASCII bytes as octal escapes."""
    return "".join(
        "\\" + c if c in "\\()" else c if ord(c) < 128 else "".join(f"\\{byte:03o}" for byte in c.encode("cp1252"))
        for c in text
    )


def pdf(text: str) -> bytes:
    """A one-page PDF 1.4 showing ``text`` in Helvetica (WinAnsi), with a correct cross-reference table."""
    content = f"BT /F1 12 Tf 72 720 Td ({_string_literal(text)}) Tj ET".encode("ascii")
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
        b"/Resources << /Font << /F1 5 0 R >> >> >>",
        b"<< /Length %d >>\nstream\n" % len(content) + content + b"\nendstream",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>",
    ]
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)
    return bytes(out)


def postscript(text: str) -> bytes:
    literal = _string_literal(text)
    return (
        "%!PS-Adobe-3.0\n%%Pages: 1\n%%EndComments\n%%Page: 1 1\n"
        f"/Helvetica findfont 12 scalefont setfont\n72 720 moveto\n({literal}) show\nshowpage\n%%EOF\n"
    ).encode("ascii")


def _zip(files: dict[str, str]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, xml in files.items():
            archive.writestr(name, xml)
    return buffer.getvalue()


def _content_types(overrides: dict[str, str]) -> str:
    parts = "".join(f'<Override PartName="{part}" ContentType="{kind}"/>' for part, kind in overrides.items())
    return (
        '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>'
        '<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
        '<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>'
        '<Default Extension="xml" ContentType="application/xml"/>'
        f"{parts}</Types>"
    )


def _relationships(*targets: tuple[str, str, str]) -> str:
    rels = "".join(f'<Relationship Id="{rid}" Type="{kind}" Target="{target}"/>' for rid, kind, target in targets)
    return (
        '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>'
        f'<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">{rels}</Relationships>'
    )


_OFFICE_DOCUMENT = "http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument"
_R = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"


def docx(text: str) -> bytes:
    """A Word document with one paragraph per line of ``text``."""
    paragraphs = "".join(f"<w:p><w:r><w:t>{escape(line)}</w:t></w:r></w:p>" for line in text.splitlines())
    return _zip({
        "[Content_Types].xml": _content_types({
            "/word/document.xml": "application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml",
        }),
        "_rels/.rels": _relationships(("rId1", _OFFICE_DOCUMENT, "word/document.xml")),
        "word/document.xml": (
            '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>'
            '<w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main">'
            f"<w:body>{paragraphs}</w:body></w:document>"
        ),
    })


def xlsx(text: str) -> bytes:
    """A workbook with one sheet, ``text`` in cell A1 (an inline string) and 42 in B1."""
    main = "http://schemas.openxmlformats.org/spreadsheetml/2006/main"
    return _zip({
        "[Content_Types].xml": _content_types({
            "/xl/workbook.xml": "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml",
            "/xl/worksheets/sheet1.xml": "application/vnd.openxmlformats-officedocument.spreadsheetml.worksheet+xml",
        }),
        "_rels/.rels": _relationships(("rId1", _OFFICE_DOCUMENT, "xl/workbook.xml")),
        "xl/_rels/workbook.xml.rels": _relationships(("rId1", f"{_R}/worksheet", "worksheets/sheet1.xml")),
        "xl/workbook.xml": (
            f'<?xml version="1.0" encoding="UTF-8" standalone="yes"?><workbook xmlns="{main}" xmlns:r="{_R}">'
            '<sheets><sheet name="Sheet1" sheetId="1" r:id="rId1"/></sheets></workbook>'
        ),
        "xl/worksheets/sheet1.xml": (
            f'<?xml version="1.0" encoding="UTF-8" standalone="yes"?><worksheet xmlns="{main}"><sheetData>'
            f'<row r="1"><c r="A1" t="inlineStr"><is><t>{escape(text)}</t></is></c><c r="B1"><v>42</v></c></row>'
            "</sheetData></worksheet>"
        ),
    })


def pptx(text: str) -> bytes:
    """A presentation with one slide holding ``text`` in a text box."""
    p = "http://schemas.openxmlformats.org/presentationml/2006/main"
    a = "http://schemas.openxmlformats.org/drawingml/2006/main"
    slide_kind = "application/vnd.openxmlformats-officedocument.presentationml.slide+xml"
    return _zip({
        "[Content_Types].xml": _content_types({
            "/ppt/presentation.xml": "application/vnd.openxmlformats-officedocument.presentationml.presentation.main+xml",
            "/ppt/slides/slide1.xml": slide_kind,
        }),
        "_rels/.rels": _relationships(("rId1", _OFFICE_DOCUMENT, "ppt/presentation.xml")),
        "ppt/_rels/presentation.xml.rels": _relationships(("rId2", f"{_R}/slide", "slides/slide1.xml")),
        "ppt/presentation.xml": (
            f'<?xml version="1.0" encoding="UTF-8" standalone="yes"?>'
            f'<p:presentation xmlns:p="{p}" xmlns:r="{_R}"><p:sldIdLst><p:sldId id="256" r:id="rId2"/></p:sldIdLst>'
            '<p:sldSz cx="9144000" cy="6858000"/><p:notesSz cx="6858000" cy="9144000"/></p:presentation>'
        ),
        "ppt/slides/slide1.xml": (
            f'<?xml version="1.0" encoding="UTF-8" standalone="yes"?>'
            f'<p:sld xmlns:p="{p}" xmlns:a="{a}" xmlns:r="{_R}"><p:cSld><p:spTree>'
            '<p:nvGrpSpPr><p:cNvPr id="1" name=""/><p:cNvGrpSpPr/><p:nvPr/></p:nvGrpSpPr><p:grpSpPr/>'
            '<p:sp><p:nvSpPr><p:cNvPr id="2" name="Text"/><p:cNvSpPr txBox="1"/><p:nvPr/></p:nvSpPr><p:spPr/>'
            f"<p:txBody><a:bodyPr/><a:p><a:r><a:t>{escape(text)}</a:t></a:r></a:p></p:txBody></p:sp>"
            "</p:spTree></p:cSld></p:sld>"
        ),
    })


def xls(text: str) -> bytes:
    """An Excel 97 workbook (BIFF8) with ``text`` in A1, written by xlwt."""
    import xlwt

    book = xlwt.Workbook(encoding="utf-8")
    book.add_sheet("Sheet1").write(0, 0, text)
    buffer = io.BytesIO()
    book.save(buffer)
    return buffer.getvalue()


_FREE, _END_OF_CHAIN, _FAT_SECTOR, _NO_STREAM = 0xFFFFFFFF, 0xFFFFFFFE, 0xFFFFFFFD, 0xFFFFFFFF
_SECTOR = 512
_MINI_STREAM_CUTOFF = 4096


def _compound_file(streams: dict[str, bytes]) -> bytes:
    """An OLE2 compound file (version 3) holding ``streams``, each at least 4096 bytes (no mini stream).

    Layout: header, one FAT sector, one directory sector, then the streams'
    sectors in order; room for three streams of up to 60 KB together.
    """
    names = sorted(streams, key=lambda name: (len(name), name.upper()))
    fat, sectors, starts = [_FAT_SECTOR, _END_OF_CHAIN], [], {}
    for name in names:
        body = streams[name]
        assert len(body) >= _MINI_STREAM_CUTOFF, f"{name}: pad streams to {_MINI_STREAM_CUTOFF} bytes"
        padded = body + b"\0" * (-len(body) % _SECTOR)
        count = len(padded) // _SECTOR
        starts[name] = 2 + len(sectors)
        fat += [starts[name] + i + 1 for i in range(count - 1)] + [_END_OF_CHAIN]
        sectors += [padded[i * _SECTOR:(i + 1) * _SECTOR] for i in range(count)]
    assert len(fat) <= 128 and len(names) <= 3
    fat += [_FREE] * (128 - len(fat))
    header = struct.pack(
        "<8s16sHHHHH6sIIIIIIIII", bytes.fromhex("D0CF11E0A1B11AE1"), bytes(16), 0x3E, 3, 0xFFFE, 9, 6, bytes(6),
        0, 1, 1, 0, _MINI_STREAM_CUTOFF, _END_OF_CHAIN, 0, _END_OF_CHAIN, 0,
    ) + struct.pack("<109I", 0, *[_FREE] * 108)

    def entry(name: str, kind: int, right: int, child: int, start: int, size: int) -> bytes:
        encoded = (name + "\0").encode("utf-16-le") if name else b""
        return struct.pack(
            "<64sHBBIII16sIQQIQ", encoded, len(encoded), kind, 1, _NO_STREAM, right, child, bytes(16), 0, 0, 0, start, size
        )

    entries = [entry("Root Entry", 5, _NO_STREAM, 1, _END_OF_CHAIN, 0)]
    for index, name in enumerate(names, start=1):
        right = index + 1 if index < len(names) else _NO_STREAM  # siblings as a chain: enough for these readers
        entries.append(entry(name, 2, right, _NO_STREAM, starts[name], len(streams[name])))
    entries += [entry("", 0, _NO_STREAM, _NO_STREAM, 0, 0)] * (4 - len(entries))
    return header + struct.pack("<128I", *fat) + b"".join(entries) + b"".join(sectors)


def _padded(data: bytes) -> bytes:
    return data + bytes(max(0, _MINI_STREAM_CUTOFF - len(data)))


def doc(text: str) -> bytes:
    """A Word 97 document: a FIB, ``text`` (Windows-1252) as one piece of the piece table in the 1Table stream."""
    text += "\r"
    encoded = text.encode("cp1252")
    text_at = 0x400
    fib = bytearray(text_at)
    struct.pack_into("<HHHHH", fib, 0x00, 0xA5EC, 0x00C1, 0, 0x0409, 0)  # wIdent, nFib (Word 97), lid en-US
    struct.pack_into("<HH", fib, 0x0A, 0x0200 | 0x0004, 0x00BF)  # fWhichTblStm (1Table), fComplex; nFibBack
    struct.pack_into("<II", fib, 0x18, text_at, text_at + len(encoded))  # fcMin, fcMac
    struct.pack_into("<H", fib, 0x20, 14)  # csw
    struct.pack_into("<H", fib, 0x3E, 22)  # cslw
    struct.pack_into("<I", fib, 0x40, text_at + len(encoded))  # cbMac
    struct.pack_into("<I", fib, 0x4C, len(text))  # ccpText
    struct.pack_into("<H", fib, 0x98, 0x5D)  # cbRgFcLcb
    # One piece: characters 0..n, 8-bit text (bit 30) at byte text_at of WordDocument.
    pieces = struct.pack("<IIHIH", 0, len(text), 0, (text_at * 2) | 0x40000000, 0)
    clx = b"\x02" + struct.pack("<I", len(pieces)) + pieces
    struct.pack_into("<II", fib, 0x1A2, 0, len(clx))  # fcClx, lcbClx: the piece table at 0 in 1Table
    # An empty style sheet (STSHI only: no styles); without one antiword reads past its buffers and may crash.
    stshi = struct.pack("<HHHHHH", 0, 0x0A, 0, 0, 0, 0) + bytes(6)
    stylesheet = struct.pack("<H", len(stshi)) + stshi
    struct.pack_into("<II", fib, 0xA2, len(clx), len(stylesheet))  # fcStshf, lcbStshf
    return _compound_file({"WordDocument": _padded(bytes(fib) + encoded), "1Table": _padded(clx + stylesheet)})


def _ppt_record(kind: int, payload: bytes, version: int = 0) -> bytes:
    return struct.pack("<HHI", version, kind, len(payload)) + payload


def ppt(text: str) -> bytes:
    """A PowerPoint 97 file: a Document container holding ``text`` as a TextBytesAtom."""
    atoms = _ppt_record(0x0FA8, text.encode("cp1252"))
    document = _ppt_record(0x03E8, atoms, version=0xF)
    document += _ppt_record(0x0FFF, bytes(max(0, _MINI_STREAM_CUTOFF - len(document) - 8)))  # an unknown record as padding
    return _compound_file({"PowerPoint Document": document})


def rtf(text: str) -> bytes:
    """RTF with non-ASCII characters written as ``\\'hh`` (Windows-1252), as word processors do."""
    escaped = "".join(
        c if ord(c) < 128 and c not in "\\{}" else ("\\" + c if c in "\\{}" else f"\\'{c.encode('cp1252').hex()}")
        for c in text
    )
    return ("{\\rtf1\\ansi\\ansicpg1252\\deff0{\\fonttbl{\\f0 Times New Roman;}}\\f0\\fs24 " + escaped + "\\par}").encode("ascii")


def tex(title: str, section: str, text: str) -> bytes:
    return (
        "\\documentclass{article}\n\\usepackage[utf8]{inputenc}\n"
        f"\\title{{{title}}}\n\\begin{{document}}\n\\maketitle\n% a comment nobody reads\n"
        f"\\section{{{section}}}\\label{{sec:one}}\n{text} with $x^2$ math and \\emph{{emphasis}}.\n"
        "\\begin{equation}E = mc^2\\end{equation}\n\\end{document}\n"
    ).encode()


def image(kind: str, size: tuple[int, int] = (40, 30), comment: str = "") -> bytes:
    """A small PNG or GIF; a PNG carries ``comment`` as a tEXt Description."""
    from PIL import Image, PngImagePlugin

    buffer = io.BytesIO()
    picture = Image.new("RGB" if kind == "png" else "P", size)
    if kind == "png" and comment:
        info = PngImagePlugin.PngInfo()
        info.add_text("Description", comment)
        picture.save(buffer, "PNG", pnginfo=info)
    else:
        picture.save(buffer, kind.upper())
    return buffer.getvalue()


def all_documents(text: str) -> dict[str, bytes]:
    """One document of every format, each holding ``text``."""
    return {
        "pdf": pdf(text),
        "ps": postscript(text),
        "docx": docx(text),
        "xlsx": xlsx(text),
        "pptx": pptx(text),
        "xls": xls(text),
        "doc": doc(text),
        "ppt": ppt(text),
        "rtf": rtf(text),
        "tex": tex("A TeX document", "Introduction", text),
        "png": image("png", comment=text),
        "gif": image("gif"),
    }


if __name__ == "__main__":
    target = Path(sys.argv[1] if len(sys.argv) > 1 else "docfixtures")
    target.mkdir(parents=True, exist_ok=True)
    for extension, data in all_documents("Carnivorous plants catch insects").items():
        (target / f"document.{extension}").write_bytes(data)
    print(f"wrote {len(MIME_TYPES)} documents to {target}")
