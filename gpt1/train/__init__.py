"""Training: batches, devices and precision, the pretraining and fine-tuning loops."""
