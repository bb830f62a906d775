"""What a laid-out picture measures: its size from the bytes dot made, whether
a viewer can show it, and where each node sits. No I/O: bytes in, numbers out.
"""

import re
import struct
import xml.etree.ElementTree as ET

SVG = '{http://www.w3.org/2000/svg}'
# Past these a picture is unusable, whatever it holds: cairo clamps a PNG to
# 32,767 px a side (by shrinking it, which made a 32,767 x 57 px strip of a
# 601-node chain), PDF viewers stop at 200 inches a side, and a strip this
# elongated shows nothing legible at any zoom.
MOST_PIXELS = 32_767
MOST_INCHES = 200
MOST_ASPECT = 40
ASPECT_FROM = 30   # inches: a small picture may be as elongated as it likes

_POINTS = re.compile(rb'<svg[^>]*?\swidth="([\d.]+)pt"[^>]*?\sheight="([\d.]+)pt"', re.S)
_MEDIABOX = re.compile(rb'/MediaBox\s*\[\s*[-\d.]+\s+[-\d.]+\s+([\d.]+)\s+([\d.]+)\s*\]')


def picture_size(data, fmt, dpi=72):
    """(width, height) in inches, and whether the renderer had to shrink it; None if unknown."""
    if fmt == 'svg':
        match = _POINTS.search(data[:4000])
        if match:
            return float(match[1]) / 72, float(match[2]) / 72, False
    elif fmt == 'png' and data[:8] == b'\x89PNG\r\n\x1a\n' and len(data) >= 24:
        width, height = struct.unpack('>II', data[16:24])
        clamped = max(width, height) >= MOST_PIXELS
        return width / dpi, height / dpi, clamped
    elif fmt == 'pdf':
        match = _MEDIABOX.search(data)
        if match:
            return float(match[1]) / 72, float(match[2]) / 72, False
    return None


def unviewable(size, dpi):
    """Why a picture of this size cannot be shown, or None if it can."""
    if size is None:
        return None
    width, height, clamped = size
    pixels = f'{width * dpi:,.0f} x {height * dpi:,.0f} px at {dpi} dpi'
    if clamped:
        return f'the picture is larger than {MOST_PIXELS:,} px a side, the most a PNG can be'
    if max(width, height) > MOST_INCHES:
        return (f'the picture would be {width:,.0f} x {height:,.0f} inches ({pixels}), '
                f'more than the {MOST_INCHES} inches a side that viewers show')
    long, short = max(width, height), max(min(width, height), 1e-9)
    if long > ASPECT_FROM and long / short > MOST_ASPECT:
        return (f'the picture would be a strip of {width:,.1f} x {height:,.1f} inches '
                f'({pixels}), too elongated to read at any zoom')
    return None


def node_positions(svg):
    """{node id: (x, y)} of each node's centre, as fractions of the SVG's width
    and height (0,0 top left), from dot's SVG, whose nodes are titled n0, n1, ..."""
    root = ET.fromstring(svg)
    box = [float(v) for v in root.get('viewBox', '0 0 1 1').split()]
    width, height = max(box[2], 1e-9), max(box[3], 1e-9)
    shift_x = shift_y = 0.0
    graph = root.find(f'{SVG}g')
    if graph is not None:
        match = re.search(r'translate\(([-\d.]+)[ ,]([-\d.]+)\)', graph.get('transform', ''))
        if match:
            shift_x, shift_y = float(match[1]), float(match[2])
    positions = {}
    for group in root.iter(f'{SVG}g'):
        if group.get('class') != 'node':
            continue
        title = group.find(f'{SVG}title')
        if title is None or not re.fullmatch(r'n\d+', title.text or ''):
            continue
        xs, ys = [], []
        for shape in group:
            if shape.tag == f'{SVG}ellipse':
                xs.append(float(shape.get('cx')))
                ys.append(float(shape.get('cy')))
            elif shape.tag in (f'{SVG}polygon', f'{SVG}path'):
                numbers = [float(v) for v in re.findall(r'-?[\d.]+', shape.get('points')
                                                        or shape.get('d') or '')]
                xs.extend(numbers[0::2])
                ys.extend(numbers[1::2])
        if xs:
            x = (min(xs) + max(xs)) / 2 + shift_x
            y = (min(ys) + max(ys)) / 2 + shift_y
            positions[int(title.text[1:])] = (round(x / width, 4), round(y / height, 4))
    return positions
