// A calibration worker for calibrateInWorkers: the package's worker entry point, bundled by Vite.
import 'microquant/worker';
