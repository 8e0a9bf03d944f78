export default { build: { target: 'es2022' }, worker: { format: 'es' }, optimizeDeps: { exclude: ['microquant'] } };
