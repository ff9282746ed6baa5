"""The recall ``location`` filter's geometry: great-circle distance and WKT polygons.

``near`` is a circle (haversine distance on a sphere of the Earth's mean radius); ``within``
is a WKT ``POLYGON`` or ``MULTIPOLYGON`` in ``lng lat`` order (WKT's x y), holes included,
tested by ray casting in plane coordinates (fine at the scale of cities and regions; a
polygon crossing the antimeridian is not supported)."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

EARTH_RADIUS_KM = 6371.0088
MAX_WKT_POINTS = 10_000

Ring = list[tuple[float, float]]  # (lng, lat) points, first == last or implicitly closed
Polygon = list[Ring]  # outer ring, then holes


class InvalidGeometry(ValueError):
    pass


def distance_km(lat1: float, lng1: float, lat2: float, lng2: float) -> float:
    p1, p2 = math.radians(lat1), math.radians(lat2)
    dp, dl = p2 - p1, math.radians(lng2 - lng1)
    a = math.sin(dp / 2) ** 2 + math.cos(p1) * math.cos(p2) * math.sin(dl / 2) ** 2
    return 2 * EARTH_RADIUS_KM * math.asin(min(1.0, math.sqrt(a)))


_NUMBER = r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?"
_POINT = re.compile(rf"\s*({_NUMBER})\s+({_NUMBER})\s*")


def _ring(text: str) -> Ring:
    points: Ring = []
    for part in text.split(","):
        m = _POINT.fullmatch(part)
        if m is None:
            raise InvalidGeometry(f"not a 'lng lat' point: {part.strip()!r}")
        lng, lat = float(m.group(1)), float(m.group(2))
        if not (-180 <= lng <= 180 and -90 <= lat <= 90):
            raise InvalidGeometry(f"point out of range (lng -180..180, lat -90..90): {part.strip()!r}")
        points.append((lng, lat))
    if len(set(points)) < 3:
        raise InvalidGeometry("a ring needs at least three distinct points")
    return points


def _rings(body: str) -> Polygon:
    """``(x y, ...), (x y, ...)`` -> rings."""
    rings = re.findall(r"\(([^()]*)\)", body)
    rest = re.sub(r"\(([^()]*)\)", "", body).replace(",", "").strip()
    if not rings or rest:
        raise InvalidGeometry("expected rings like ((lng lat, lng lat, lng lat, ...))")
    return [_ring(r) for r in rings]


def parse_wkt(text: str) -> list[Polygon]:
    """A WKT ``POLYGON`` or ``MULTIPOLYGON`` as a list of polygons."""
    m = re.fullmatch(r"\s*(MULTIPOLYGON|POLYGON)\s*\((.*)\)\s*", text, flags=re.IGNORECASE | re.DOTALL)
    if m is None:
        raise InvalidGeometry("must be a WKT POLYGON or MULTIPOLYGON, e.g. POLYGON((lng lat, lng lat, lng lat, ...))")
    kind, body = m.group(1).upper(), m.group(2)
    if body.count(",") + 1 > MAX_WKT_POINTS:
        raise InvalidGeometry(f"at most {MAX_WKT_POINTS} points")
    if kind == "POLYGON":
        return [_rings(body)]
    polygons = re.findall(r"\(\s*(\([^()]*\)(?:\s*,\s*\([^()]*\))*)\s*\)", body)
    rest = re.sub(r"\(\s*(\([^()]*\)(?:\s*,\s*\([^()]*\))*)\s*\)", "", body).replace(",", "").strip()
    if not polygons or rest:
        raise InvalidGeometry("expected MULTIPOLYGON(((lng lat, ...)), ((lng lat, ...)))")
    return [_rings(p) for p in polygons]


def _in_ring(lng: float, lat: float, ring: Ring) -> bool:
    inside = False
    n = len(ring)
    for i in range(n):
        (x1, y1), (x2, y2) = ring[i], ring[(i + 1) % n]
        if (y1 > lat) != (y2 > lat) and lng < x1 + (lat - y1) * (x2 - x1) / (y2 - y1):
            inside = not inside
    return inside


def in_polygons(lat: float, lng: float, polygons: list[Polygon]) -> bool:
    return any(_in_ring(lng, lat, poly[0]) and not any(_in_ring(lng, lat, hole) for hole in poly[1:])
               for poly in polygons)


@dataclass(frozen=True)
class Area:
    """A ``near`` circle (``center`` (lat, lng), ``radius_km``) or ``within`` polygons."""

    center: tuple[float, float] | None = None
    radius_km: float | None = None
    polygons: tuple[tuple[tuple[tuple[float, float], ...], ...], ...] | None = None

    def contains(self, lat: float, lng: float) -> bool:
        if self.center is not None and self.radius_km is not None:
            return distance_km(self.center[0], self.center[1], lat, lng) <= self.radius_km
        if self.polygons is not None:
            return in_polygons(lat, lng, [[list(r) for r in p] for p in self.polygons])
        return False

    @staticmethod
    def of_wkt(text: str) -> Area:
        return Area(polygons=tuple(tuple(tuple(r) for r in poly) for poly in parse_wkt(text)))
