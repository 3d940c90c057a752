"""Real documents the ingestion tests generate themselves (no binary files in the repo).

Each writer puts one file with a known heading, paragraph, table and/or
picture into a folder, so tests can assert the chunks Docling yields for it.
"""

from __future__ import annotations

from pathlib import Path

TABLE = [("Glider", "Depth (m)", "Range (km)"), ("Kestrel", "1000", "600"), ("Petrel", "200", "150")]
PICTURE_CAPTION = "Figure 1: Kestrel glider diving profile"
TABLE_CAPTION = "Table 2: Depth and range of the gliders"


def picture(path: Path, color: tuple[int, int, int] = (30, 90, 160)) -> Path:
    """A small PNG with a dark bar on a coloured background."""
    from PIL import Image, ImageDraw

    image = Image.new("RGB", (120, 80), color)
    ImageDraw.Draw(image).rectangle([10, 30, 110, 50], fill=(240, 240, 240))
    image.save(path)
    return path


def docx(folder: Path) -> Path:
    """Heading, paragraph, a 3x3 table, and a picture followed by its caption."""
    import docx as python_docx
    from docx.shared import Inches

    document = python_docx.Document()
    document.add_heading("Glider fleet", level=1)
    document.add_paragraph("The Velmora Institute operates two gliders, Kestrel and Petrel.")
    table = document.add_table(rows=len(TABLE), cols=len(TABLE[0]))
    for r, row in enumerate(TABLE):
        for c, value in enumerate(row):
            table.cell(r, c).text = value
    document.add_paragraph("Kestrel dives deeper than any other glider of the institute.")
    document.add_picture(str(picture(folder / "_docx_picture.png")), width=Inches(1.5))
    document.add_paragraph(PICTURE_CAPTION, style="Caption")
    document.add_paragraph("Petrel is used for shallow coastal surveys.")
    out = folder / "fleet.docx"
    document.save(out)
    (folder / "_docx_picture.png").unlink()
    return out


def xlsx(folder: Path) -> Path:
    """One sheet holding the table."""
    from openpyxl import Workbook

    workbook = Workbook()
    sheet = workbook.active
    sheet.title = "Gliders"
    for row in TABLE:
        sheet.append([int(v) if v.isdigit() else v for v in row])
    out = folder / "gliders.xlsx"
    workbook.save(out)
    return out


def pptx(folder: Path) -> Path:
    """One slide with a title, a text box, a picture and a table."""
    from pptx import Presentation
    from pptx.util import Inches

    deck = Presentation()
    slide = deck.slides.add_slide(deck.slide_layouts[5])  # title only
    slide.shapes.title.text = "Glider results"
    box = slide.shapes.add_textbox(Inches(0.5), Inches(1.5), Inches(8), Inches(1))
    box.text_frame.text = "Kestrel completed 14 missions in 2024."
    slide.shapes.add_picture(str(picture(folder / "_pptx_picture.png")), Inches(0.5), Inches(2.5))
    shape = slide.shapes.add_table(len(TABLE), len(TABLE[0]), Inches(3), Inches(2.5), Inches(5), Inches(1.5))
    for r, row in enumerate(TABLE):
        for c, value in enumerate(row):
            shape.table.cell(r, c).text = value
    out = folder / "results.pptx"
    deck.save(out)
    (folder / "_pptx_picture.png").unlink()
    return out


def html(folder: Path, *, remote: str = "http://127.0.0.1:9/pixel.png") -> Path:
    """A table, an inline (data: URI) picture with a caption, and references the converter must not fetch."""
    import base64
    from io import BytesIO

    from PIL import Image

    buffer = BytesIO()
    Image.new("RGB", (16, 16), (200, 30, 30)).save(buffer, "PNG")
    inline = base64.b64encode(buffer.getvalue()).decode()
    rows = "".join("<tr>" + "".join(f"<td>{v}</td>" for v in row) + "</tr>" for row in TABLE[1:])
    head = "".join(f"<th>{v}</th>" for v in TABLE[0])
    out = folder / "gliders.html"
    out.write_text(
        f"""<!doctype html><html><head><title>Gliders</title></head><body>
<h1>Glider depths</h1>
<p>Depth ratings of the institute's gliders.</p>
<table><caption>{TABLE_CAPTION}</caption><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>
<figure><img src="data:image/png;base64,{inline}" alt="red square">
<figcaption>{PICTURE_CAPTION}</figcaption></figure>
<img src="file:///etc/passwd"><img src="{remote}">
<p>Both gliders were built in Dunmere.</p>
</body></html>""",
        encoding="utf-8",
    )
    return out


def pdf(folder: Path, *, name: str = "report.pdf", password: str | None = None) -> Path:
    """A one-page PDF: heading, paragraph, a table drawn as text rows, and a picture."""
    from fpdf import FPDF

    doc = FPDF()
    doc.add_page()
    doc.set_font("Helvetica", "B", 16)
    doc.cell(0, 10, "Annual glider report", new_x="LMARGIN", new_y="NEXT")
    doc.set_font("Helvetica", size=11)
    doc.multi_cell(0, 6, "Kestrel completed 14 missions in 2024 and reached a depth of 1000 metres.")
    with doc.table() as table:
        for row in TABLE:
            cells = table.row()
            for value in row:
                cells.cell(value)
    doc.image(str(picture(folder / "_pdf_picture.png")), w=40)
    doc.cell(0, 8, PICTURE_CAPTION, new_x="LMARGIN", new_y="NEXT")
    if password:
        doc.set_encryption(owner_password=password + "-owner", user_password=password)
    out = folder / name
    doc.output(str(out))
    (folder / "_pdf_picture.png").unlink()
    return out
