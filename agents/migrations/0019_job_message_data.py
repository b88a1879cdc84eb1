# A job's messages (its error, what it is doing now) kept as their template and parameters
# beside the English text, shown in the reader's language when read (issue 29, item 3).

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('agents', '0018_model_limits'),
    ]

    operations = [
        migrations.AddField(
            model_name='job',
            name='current_data',
            field=models.JSONField(blank=True, null=True, verbose_name='current (template and parameters)'),
        ),
        migrations.AddField(
            model_name='job',
            name='error_data',
            field=models.JSONField(blank=True, null=True, verbose_name='error (template and parameters)'),
        ),
    ]
