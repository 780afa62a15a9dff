"""Render frames of a ``parmbs export --xdmf`` file to a PNG with VTK off-screen — the
reader ParaView uses (vtkXdmfReader), so the picture is what ParaView loads.

    pip install vtk          # PyPI wheel; off-screen through EGL/OSMesa, no X server
    python benchmarks/render_xdmf.py OUT.xdmf OUT.png [--field NAME] [--frames 0,-1]

The chosen frames are drawn over each other (earlier ones faint), cells coloured by
the cell field NAME (default ``density``; NaN cells — rigid bodies, springs — grey),
lines as tubes, with a colour bar and the times in the title.  Not part of parmbs:
VTK is not a dependency.
"""
import argparse

import vtk
from vtkmodules.vtkCommonExecutionModel import vtkStreamingDemandDrivenPipeline as SDDP
from vtkmodules.vtkIOXdmf2 import vtkXdmfReader


def frame(path, t):
    r = vtkXdmfReader()
    r.SetFileName(path)
    r.UpdateTimeStep(t)
    out = vtk.vtkUnstructuredGrid()
    out.DeepCopy(r.GetOutputDataObject(0))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("xdmf")
    ap.add_argument("png")
    ap.add_argument("--field", default="density")
    ap.add_argument("--frames", default="0,-1", help="frame indices, comma separated")
    a = ap.parse_args()
    r = vtkXdmfReader()
    r.SetFileName(a.xdmf)
    r.UpdateInformation()
    times = r.GetOutputInformation(0).Get(SDDP.TIME_STEPS())
    picks = [times[int(i)] for i in a.frames.split(",")]
    grids = [frame(a.xdmf, t) for t in picks]
    rng = [float("inf"), -float("inf")]
    for g in grids:
        arr = g.GetCellData().GetArray(a.field)
        lo, hi = arr.GetRange()
        if lo == lo:
            rng = [min(rng[0], lo), max(rng[1], hi)]
    if rng[0] > rng[1]:
        rng = [0.0, 1.0]
    lut = vtk.vtkLookupTable()
    lut.SetHueRange(0.667, 0.0)
    lut.SetTableRange(*rng)
    lut.SetNanColor(0.35, 0.35, 0.35, 1.0)
    lut.Build()
    ren = vtk.vtkRenderer()
    ren.SetBackground(1, 1, 1)
    for i, g in enumerate(grids):
        g.GetCellData().SetActiveScalars(a.field)
        alpha = 1.0 if i == len(grids) - 1 else 0.3
        geo = vtk.vtkGeometryFilter()
        geo.SetInputData(g)
        m = vtk.vtkDataSetMapper()
        m.SetInputConnection(geo.GetOutputPort())
        m.SetScalarModeToUseCellData()
        m.SetLookupTable(lut)
        m.SetScalarRange(*rng)
        m.UseLookupTableScalarRangeOn()
        act = vtk.vtkActor()
        act.SetMapper(m)
        act.GetProperty().SetOpacity(alpha)
        act.GetProperty().SetLineWidth(4)
        act.GetProperty().SetEdgeVisibility(g.GetNumberOfCells() <= 400)   # else the edges blacken a mesh
        act.GetProperty().SetEdgeColor(0.2, 0.2, 0.2)
        ren.AddActor(act)
    bar = vtk.vtkScalarBarActor()
    bar.SetLookupTable(lut)
    bar.SetTitle(a.field)
    bar.GetTitleTextProperty().SetColor(0, 0, 0)
    bar.GetLabelTextProperty().SetColor(0, 0, 0)
    bar.SetWidth(0.08)
    ren.AddViewProp(bar)
    txt = vtk.vtkTextActor()
    txt.SetInput(f"{a.xdmf}: t = " + ", ".join(f"{t:.4g}" for t in picks) + " (earlier faint)")
    txt.GetTextProperty().SetColor(0, 0, 0)
    txt.GetTextProperty().SetFontSize(18)
    txt.SetPosition(10, 10)
    ren.AddViewProp(txt)
    win = vtk.vtkRenderWindow()
    win.SetOffScreenRendering(1)
    win.AddRenderer(ren)
    win.SetSize(1100, 700)
    ren.ResetCamera()
    ren.GetActiveCamera().Zoom(1.1)
    win.Render()
    shot = vtk.vtkWindowToImageFilter()
    shot.SetInput(win)
    shot.Update()
    w = vtk.vtkPNGWriter()
    w.SetFileName(a.png)
    w.SetInputConnection(shot.GetOutputPort())
    w.Write()
    print(f"wrote {a.png} ({len(picks)} frames of {len(times)}, {a.field} in [{rng[0]:.4g}, {rng[1]:.4g}])")


if __name__ == "__main__":
    main()
